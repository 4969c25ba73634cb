"""Build the two shipped demo dataset versions, `demo-v1` and `demo-v2`.

The demo datasets describe the help center of Nimbus Cloud, a fictional cloud provider: product
documentation articles (the corpus), questions with reference answers and graded relevance
judgments, a logged run of the production BM25 retriever, logged real-user interactions and
human-labelled answers for judge evaluation. Everything is hand-written below as Python data;
this script only assembles it, computes the BM25 retrievals and writes the files.

`demo-v2` is the next release of the same dataset: the `demo-v1` corpus plus the documentation of
a new product (Nimbus Functions), more questions and logs, and a few corrected labels, listed in
its DATASET.md. Items that did not change keep their ids and content.

The output is deterministic (fixed order, sorted JSON keys, UTF-8, `\\n` line endings), so the
committed files can be checked against a fresh build:

    python scripts/build_demo_datasets.py              # writes data/datasets/demo-v{1,2}/
    python scripts/build_demo_datasets.py --out /tmp/x  # writes /tmp/x/demo-v{1,2}/
"""

from __future__ import annotations

import argparse
import json
import math
import random
import re
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

DEFAULT_OUT = Path(__file__).resolve().parents[1] / "data" / "datasets"
RUN_TAG = "production-bm25"
RUN_DEPTH = 10
LOG_DEPTH = 5
LOG_CONTEXTS = 3  # retrieved documents the logged system gave its generator
LOG_MODEL = "gpt-4o-mini"  # the logged system's generator, for token pricing
# Regex checks of a few answers (whole-output semantics, case-insensitive)
EXPECTED_PATTERNS = {
    "q001": r"\b1st\b",
    "q002": r"^no\b",
    "q003": r"\$49\b",
    "q004": r"^no\b",
}
BM25_K1 = 1.2
BM25_B = 0.75


# --------------------------------------------------------------------------------------------
# Data model
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Doc:
    """One help-center article."""

    doc_id: str
    cluster: str
    title: str
    text: str


@dataclass(frozen=True)
class Query:
    """A question with its reference answer and graded judgments {doc_id: 0..3}."""

    query_id: str
    question: str
    answer: str
    qrels: dict[str, int]
    session_id: str | None = None
    turn: int | None = None


@dataclass(frozen=True)
class QrelChange:
    """A relevance label of demo-v1 corrected (or a missing one added) in demo-v2."""

    query_id: str
    doc_id: str
    relevance: int
    reason: str


@dataclass(frozen=True)
class AnswerChange:
    """A ground-truth answer of demo-v1 corrected in demo-v2."""

    query_id: str
    answer: str
    reason: str


@dataclass(frozen=True)
class LogEntry:
    """A logged real-user interaction; the retrieved documents are computed with BM25."""

    log_id: str
    timestamp: str
    session_id: str
    question: str
    answer: str
    shown_doc_id: str


@dataclass(frozen=True)
class JudgeLabel:
    """An answer labelled by two human raters (1-5) and with the correct show/hide decision."""

    label_id: str
    question: str
    context_doc_ids: tuple[str, ...]
    answer: str
    show: bool
    rater_a: int
    rater_b: int


@dataclass(frozen=True)
class JudgeChange:
    """A show/hide label of demo-v1 corrected in demo-v2."""

    label_id: str
    show: bool
    reason: str


@dataclass
class Version:
    """Everything that goes into one dataset version folder."""

    name: str
    docs: list[Doc]
    queries: list[Query]
    logs: list[dict[str, Any]]
    judge_labels: list[JudgeLabel]
    description: str
    changes: list[str] = field(default_factory=list)


# --------------------------------------------------------------------------------------------
# Corpus. One block per topic: "doc-id: Title" followed by the article text (joined into one
# paragraph); articles are separated by blank lines.
# --------------------------------------------------------------------------------------------

BILLING_DOCS = """
bill-001: How billing cycles and invoices work
    Nimbus Cloud bills in arrears on a calendar-month cycle. On the 1st of each month an invoice
    is generated for all usage in the previous month and emailed to the billing contact of the
    organization. Invoices can be downloaded as PDF or CSV under Billing > Invoices and remain
    available there for 10 years. Cards on file are charged automatically on the 3rd of the
    month; invoices paid by bank transfer are due within 30 days.

bill-002: Platform plans: Starter, Team and Enterprise
    Every organization is on one of three platform plans. Starter has no platform fee, allows up
    to 10 running instances and includes Basic support. Team costs $49 per month per
    organization, raises the limit to 100 running instances and adds single sign-on and
    Developer support. Enterprise is a custom annual contract starting at $2,000 per month with
    unlimited instances, Enterprise support, a 99.99% uptime SLA for multi-zone deployments and a
    named technical account manager.

bill-003: Free tier and trial credit
    New accounts receive $200 in trial credit that is valid for 60 days after sign-up. In
    addition, the always-free tier includes one g2-micro instance for up to 750 hours per month,
    5 GB of Standard object storage and 100 GB of internet egress per month. Usage beyond the
    free allowances is charged at normal rates once the trial credit is used up or has expired.
    The free tier is limited to one account per person or company.

bill-004: Accepted payment methods
    Nimbus Cloud accepts Visa, Mastercard and American Express credit and debit cards.
    Organizations with a billing address in the EU can also pay by SEPA direct debit. Payment by
    bank transfer against invoice is available on the Enterprise plan or when monthly spend
    exceeds $5,000. PayPal, prepaid cards and cryptocurrencies are not accepted. Manage your
    payment methods under Billing > Payment methods.

bill-005: What happens when a payment fails
    If an automatic charge fails, Nimbus Cloud retries it 3 days and 7 days later and emails the
    billing contact after each attempt. When an invoice is 14 days past due, the organization is
    restricted: existing resources keep running, but new resources cannot be created. At 30 days
    past due all running instances are stopped, and at 60 days past due the organization's
    resources are permanently deleted. To resolve a failed payment, update the card under
    Billing > Payment methods and click Retry payment on the unpaid invoice.

bill-006: Per-second billing for instances
    Instances are billed per second, with a 60-second minimum each time they start, and the
    monthly charge for an instance is capped at 672 hours (28 days) of usage. A stopped instance
    is not charged for vCPU and memory. Block volumes attached to a stopped instance, its
    snapshots and any reserved IP addresses continue to be billed until you delete them.

bill-007: Reserved commitments
    A reserved commitment lowers the price of an instance family in one region in exchange for
    a 1-year or 3-year term: 30% off on-demand prices for 1 year and 50% off for 3 years. The
    discount is applied automatically to matching running instances and billed monthly over the
    term. Commitments cannot be cancelled or refunded, but once per year a commitment can be
    exchanged for a different instance family of equal or greater value.

bill-008: Promotional and trial credits
    Credits are applied to an invoice before your payment method is charged, and the credit with
    the earliest expiration date is used first. Your remaining balance and the expiration dates
    are listed under Billing > Credits. Credits cannot be used for Marketplace products or paid
    support plans, and they cannot be transferred to another organization or exchanged for cash.

bill-009: Budgets and spending alerts
    Budgets let you track spending for an organization or a single project. Under Billing >
    Budgets you set a monthly amount and receive alerts by email and webhook when actual spend
    reaches 50%, 90% and 100% of it, and when the forecast for the month exceeds the budget.
    Budgets only send notifications; they never stop or throttle resources. To enforce a hard
    limit, use a project spending limit.

bill-010: Project spending limits
    A spending limit is a hard cap on the monthly cost of a project, available on the Starter and
    Team plans. When the limit is reached, no new resources can be created in the project and
    its running instances are stopped; block volumes, buckets and their data are kept. The
    minimum limit is $10. Raise the limit, or wait for the next calendar month, to start the
    instances again.

bill-011: Taxes and VAT
    Prices on the Nimbus Cloud website exclude tax. Customers in the EU are charged VAT at their
    country's rate unless a valid VAT ID is entered under Billing > Tax settings, in which case
    the reverse-charge mechanism applies. US customers are charged sales tax in states where
    cloud services are taxable. Changes to your tax ID or billing country apply from the next
    invoice and are not applied to past invoices.

bill-012: Refunds and billing disputes
    To dispute a charge, open a support ticket in the Billing category within 30 days of the
    invoice date. For unintended usage, such as a forgotten GPU instance, Nimbus Cloud grants a
    one-time goodwill refund of up to $500 per organization. Approved refunds are returned to the
    original payment method within 5-10 business days, or as account credit if you prefer.

bill-013: Data transfer pricing
    Inbound data transfer is free. Outbound transfer to the internet is free for the first 100 GB
    per organization each month and costs $0.01 per GB after that. Traffic between Nimbus
    regions, including VPC peering and cross-region replication, costs $0.02 per GB. Traffic
    between resources in the same region over private IP addresses is free.

bill-014: Cost explorer and usage exports
    The cost explorer under Billing > Cost explorer shows daily costs for the last 13 months,
    grouped by project, service, region or resource tag. Cost data is refreshed every 6 hours,
    so the figures for the current day are estimates. For your own analysis you can download
    usage as CSV or schedule a daily export in Parquet format to an Object Storage bucket.

bill-015: Changing your platform plan
    Upgrades from Starter to Team or Enterprise take effect immediately, and the Team fee for
    the current month is prorated. Downgrades take effect at the start of the next billing cycle.
    To downgrade from Team to Starter, the organization must have 10 or fewer running instances,
    and single sign-on must be disabled first. Change your plan under Billing > Plan.
"""

STORAGE_DOCS = """
stor-001: Object Storage overview
    Nimbus Object Storage stores unstructured data as objects in buckets. It is compatible with
    the Amazon S3 API, so existing S3 tools and SDKs work after changing the endpoint to
    https://<region>.objects.nimbuscloud.com. A single object can be up to 5 TB. One PUT request
    can upload up to 5 GB; larger objects must be uploaded with multipart upload. Each
    organization can create up to 1,000 buckets.

stor-002: Object Storage classes
    Every object has a storage class. Standard costs $0.020 per GB-month and is meant for
    frequently accessed data. Infrequent Access costs $0.010 per GB-month, charges $0.01 per GB
    retrieved and has a 30-day minimum storage duration. Archive costs $0.002 per GB-month and
    has a 180-day minimum storage duration; archived objects must be restored before they can be
    read, which takes up to 12 hours.

stor-003: Lifecycle rules
    Lifecycle rules automate what happens to objects as they age. A rule can move objects to
    Infrequent Access or Archive after a number of days, delete objects or noncurrent versions
    after a number of days, and abort incomplete multipart uploads. A bucket can have up to 100
    rules, optionally filtered by prefix or tag. Rules are evaluated once a day at 00:00 UTC, and
    a new or changed rule can take up to 48 hours to apply to all objects.

stor-004: Object versioning
    When versioning is enabled on a bucket, every overwrite or delete keeps the previous version
    of the object, and each stored version is billed as a separate object. Deleting an object
    without specifying a version adds a delete marker instead of removing data. Once enabled,
    versioning can be suspended but never fully disabled. To keep costs under control, add a
    lifecycle rule that deletes noncurrent versions after a number of days.

stor-005: Bucket access and public objects
    Buckets and objects are private by default. You can make objects readable by anyone with a
    bucket policy, or with the public-read ACL on individual objects, unless Block Public Access
    is enabled for the organization, which overrides both. To share a private object
    temporarily, generate a presigned URL; presigned URLs are valid for up to 7 days.

stor-006: Block Volumes
    Block Volumes are network-attached SSD disks for instances. A volume can be between 10 GB and
    16 TB and is attached to one instance at a time in the same zone. The ssd-standard type
    provides a baseline of 3,000 IOPS and costs $0.08 per GB-month; ssd-performance provides up
    to 64,000 IOPS and costs $0.15 per GB-month. Volumes exist independently of instances and are
    kept when an instance is terminated, unless Delete with instance was selected.

stor-007: Resizing a block volume
    You can increase the size of a block volume while it is attached and in use, but a volume can
    never be shrunk. After resizing, extend the partition and file system inside the instance,
    for example with growpart and resize2fs for ext4 or xfs_growfs for XFS. A volume can be
    resized once every 6 hours. To move data to a smaller disk, create a new volume and copy the
    data.

stor-008: Volume snapshots
    A snapshot is a point-in-time, crash-consistent copy of a block volume. Snapshots are
    incremental, so only blocks changed since the previous snapshot are stored, and they are
    billed at $0.03 per GB-month. You can create a new volume from a snapshot in any zone of the
    same region, or copy the snapshot to another region. For application-consistent snapshots,
    pause writes or freeze the file system first.

stor-009: Automated instance backups
    Automated backups take a daily image of all volumes attached to an instance during a backup
    window you choose. Enable them under Compute > Instances > [instance] > Backups. Backups are
    kept for 7 days by default, and retention can be set to any value from 1 to 35 days.
    Enabling backups adds 20% to the instance's price. Restoring a backup creates a new
    instance; the original instance is not modified.

stor-010: File Shares
    File Shares is managed NFS storage (NFSv4.1) that multiple instances can mount at the same
    time, as long as they are in the same VPC. A share can be 100 GB to 64 TB and costs $0.08 per
    GB-month. Throughput scales with size at 100 MB/s per TB provisioned, with a minimum of
    100 MB/s. Shares can be grown online but not shrunk.

stor-011: Encryption of stored data
    All data stored in Object Storage, Block Volumes, File Shares and snapshots is encrypted at
    rest with AES-256 by default, at no extra cost. For buckets and volumes you can instead use a
    customer-managed key from Nimbus KMS, selected when the bucket or volume is created. Data in
    transit to Nimbus APIs is protected with TLS 1.2 or higher.

stor-012: Object Storage limits and performance
    Bucket names must be globally unique, 3 to 63 characters long, and contain only lowercase
    letters, numbers and hyphens. There is no limit on the number of objects in a bucket. Each
    prefix in a bucket supports at least 3,500 write requests and 5,500 read requests per second;
    spread heavy workloads across several prefixes to scale further.

stor-013: Deleting a bucket
    A bucket can only be deleted when it is empty, including all object versions and delete
    markers. Before deleting a large bucket, use the Empty bucket action in the console or a
    lifecycle rule that expires all objects. Deletion cannot be undone, and the bucket name
    becomes available to other customers after 24 hours.

stor-014: Cross-region replication
    Replication automatically copies new objects from a bucket to a bucket in another region.
    Versioning must be enabled on both the source and the destination bucket. Objects that
    existed before the rule was created are not replicated; copy them with a batch copy job.
    Most objects are replicated within 15 minutes, and replicated data is charged as
    inter-region transfer at $0.02 per GB, plus storage in the destination bucket.

stor-015: Restoring objects from Archive
    Objects in the Archive class must be restored before they can be downloaded. Start a restore
    from the console or with the RestoreObject API and choose how many days, from 1 to 30, the
    temporary copy stays available. A Standard restore completes within 12 hours; a Bulk restore
    is cheaper and completes within 48 hours. While restored, the object is billed at both the
    Archive and the Standard rate.
"""

COMPUTE_DOCS = """
comp-001: Instance types
    Nimbus Compute offers four instance families. General-purpose g2 instances have 4 GB of
    memory per vCPU, from g2-small (2 vCPUs, 8 GB) to g2-xlarge (16 vCPUs, 64 GB), plus the
    shared-core g2-micro (1 vCPU, 1 GB). Compute-optimized c2 instances have dedicated 3.5 GHz
    cores and 2 GB per vCPU, and memory-optimized m2 instances have 8 GB per vCPU, up to m2-4xlarge
    (32 vCPUs, 256 GB). GPU instances are described in a separate article.

comp-002: Creating an instance
    To create an instance in the console, go to Compute > Instances > Create and choose a region
    and zone, an image, an instance type, an SSH key and a VPC. With the CLI, run nimbus compute
    instances create web-1 --type g2-small --image ubuntu-24.04 --zone fra1-a --ssh-key laptop.
    Most Linux instances are running and reachable over SSH within 60 seconds.

comp-003: Instance lifecycle: stop, start and terminate
    An instance moves through the states provisioning, running, stopping, stopped and
    terminated. A stopped instance keeps its volumes and private IP address, but its ephemeral
    public IP address is released, and a new one is assigned when it starts again; attach a
    reserved IP if the address must stay the same. Terminating an instance is permanent and
    deletes its boot volume. Enable termination protection to prevent accidental deletion.

comp-004: Changing the instance type
    To resize an instance, stop it, choose a new type under Compute > Instances > [instance] >
    Resize and start it again; the change usually takes about 2 minutes. You can move between
    families, for example from g2-medium to m2-large, as long as the new type is available in the
    instance's zone. The boot volume, data volumes and private IP address are kept.

comp-005: Images and custom images
    Public images are available for Ubuntu 22.04 and 24.04, Debian 12, Rocky Linux 9 and Windows
    Server 2022; Windows instances include a license fee of $0.02 per vCPU-hour. You can create a
    custom image from a stopped instance and use it to launch identical instances. Custom images
    can be shared with other projects in the same organization; each project can store up to 50
    custom images, billed at $0.03 per GB-month.

comp-006: Connecting to a Linux instance with SSH
    Linux instances accept SSH key authentication only; password login is disabled in all public
    images. Add your public key under Account > SSH keys before creating the instance, then
    connect with ssh <user>@<public-ip>, where the user is ubuntu for Ubuntu, debian for Debian
    and rocky for Rocky Linux. If you have lost your private key, use Reset access on the
    instance page to install a new key; this requires a reboot.

comp-007: Web console access
    The web console gives you keyboard and screen access to an instance from the browser, even
    when its network or SSH configuration is broken. Open it from Compute > Instances >
    [instance] > Console. Using the console requires the compute.admin role, and every console
    session is recorded in the audit log.

comp-008: Compute quotas
    Quotas limit how many resources a project can use in each region. By default a project can
    run 24 vCPUs per region on the Starter plan and 200 vCPUs per region on the Team plan, and
    the GPU quota is 0 on all plans. Request an increase under Account > Quotas; most requests
    are reviewed within 1 business day, and GPU requests require at least one paid invoice.

comp-009: Autoscaling groups
    An autoscaling group runs a variable number of identical instances created from an instance
    template. You set a minimum and maximum size and a target average CPU utilization (60% by
    default), and the group adds or removes instances to stay near the target, waiting a
    300-second cooldown between scaling actions. Instances that fail health checks are replaced
    automatically, and groups can register their instances with a load balancer.

comp-010: Spot instances
    Spot instances use spare capacity at up to 70% below on-demand prices. Nimbus Cloud can
    reclaim a spot instance at any time with a 30-second warning, which is published on the
    instance metadata endpoint /v1/spot/termination-time. Spot instances are not covered by the
    Compute SLA and are best suited to batch jobs, CI runners and other fault-tolerant workloads.

comp-011: GPU instances
    Two GPU types are available: gpu-l4 with one NVIDIA L4 (24 GB), 8 vCPUs and 32 GB of memory,
    and gpu-a100 with one NVIDIA A100 (80 GB), 12 vCPUs and 85 GB of memory. GPU instances are
    offered in fra1 and nyc1 only. The ubuntu-24.04-gpu image comes with NVIDIA drivers and CUDA
    preinstalled. Because the default GPU quota is 0, request a quota increase before creating
    your first GPU instance.

comp-012: Instance metadata service
    Each instance can query information about itself at http://169.254.169.254/v1/, including
    its hostname, region, zone, SSH keys, user data and spot termination notices. The service is
    reachable only from within the instance. Requests must include the Nimbus-Metadata-Token
    header, obtained with a PUT request to /v1/token; tokens are valid for up to 6 hours.

comp-013: User data and cloud-init
    User data is a script or cloud-init configuration that runs automatically the first time an
    instance boots, for example to install packages or write configuration files. User data can
    be up to 64 KB and is set when the instance is created. On Linux images the output of the
    script is written to /var/log/cloud-init-output.log, the first place to look if setup did
    not complete.

comp-014: Host maintenance and live migration
    Nimbus Cloud regularly updates the physical hosts that run instances. Most instances are
    live-migrated to another host without a reboot or noticeable interruption. GPU instances and
    instances with local NVMe disks cannot be live-migrated; they are rebooted instead, and you
    are notified by email and in the console at least 7 days in advance, with the option to
    reschedule the reboot within the maintenance window.

comp-015: Compute SLA
    Nimbus Cloud guarantees 99.95% monthly uptime for instances deployed across two or more zones
    of a region and 99.5% for a single instance; the Enterprise plan raises the multi-zone
    commitment to 99.99%. If uptime falls below the commitment, you receive a service credit of
    10% of the affected instances' monthly cost, 25% if uptime is below 99.0% and 100% if it is
    below 95.0%. Submit credit claims in a support ticket within 30 days of the incident.
"""

NETWORKING_DOCS = """
net-001: Virtual Private Cloud (VPC) overview
    A VPC is a private network for your resources in one region. Every project gets a default VPC
    in each region with the range 10.10.0.0/16, and you can create custom VPCs with any RFC 1918
    range between /16 and /28. Each project can have up to 5 VPCs per region. Resources in the
    same VPC communicate over private IP addresses at no charge.

net-002: Subnets
    A VPC is divided into subnets, each in a single zone. In every subnet the first four
    addresses and the last address are reserved by Nimbus Cloud, so a /24 subnet provides 251
    usable addresses. The range of a subnet cannot be changed after creation; to grow, add
    another subnet. Instances get their private IP address from the subnet chosen when they are
    created.

net-003: Cloud Firewalls
    Cloud Firewalls are stateful firewalls applied to instances by tag or by name. By default a
    firewall denies all inbound traffic and allows all outbound traffic, so you must add rules,
    for example one allowing TCP port 22 from your office IP address for SSH. Each firewall can
    contain up to 50 rules, and an instance can have up to 5 firewalls. Rule changes take effect
    within a few seconds, without restarting instances.

net-004: Reserved IP addresses
    A reserved IP is a static public IPv4 address that stays in your project until you release it
    and can be moved between instances in the same region. A reserved IP is free while it is
    attached to a running instance; it costs $0.005 per hour while unattached or attached to a
    stopped instance. Each project can hold 5 reserved IPs per region by default.

net-005: Load balancers
    Nimbus Load Balancers distribute traffic across instances in a region. A network load
    balancer works at layer 4 (TCP and UDP), while an application load balancer works at layer 7
    and can route HTTP and HTTPS requests by host and path. Each load balancer costs $0.025 per
    hour plus $0.008 per GB processed. Health checks run every 10 seconds, and a target is marked
    unhealthy after 3 consecutive failures.

net-006: TLS certificates for load balancers
    Application load balancers can terminate HTTPS with a managed certificate or one you upload.
    Managed certificates are issued by Let's Encrypt at no cost and renewed automatically 30 days
    before they expire; the domain's DNS must point to the load balancer for issuance to succeed.
    Uploaded certificates must be in PEM format and include the full chain. A load balancer can
    serve up to 25 certificates using SNI.

net-007: VPC peering
    VPC peering connects two VPCs so that their resources communicate over private IP addresses.
    The VPCs can be in different projects or regions, but their IP ranges must not overlap.
    Peering is not transitive: if A is peered with B and B with C, A cannot reach C. Traffic over
    a peering connection is free within a region and costs $0.02 per GB between regions.

net-008: Site-to-site VPN
    A VPN gateway connects a VPC to your on-premises network over IPsec with IKEv2. Each gateway
    provides two tunnels to different Nimbus endpoints for redundancy, and each tunnel supports
    up to 1.25 Gbps. A VPN gateway costs $0.05 per hour, and traffic through it is billed as
    normal internet egress. Both static routes and BGP dynamic routing are supported.

net-009: Nimbus DNS
    Nimbus DNS hosts authoritative DNS zones for your domains on a global anycast network. Each
    hosted zone costs $0.50 per month, and queries cost $0.40 per million. Supported record types
    are A, AAAA, CNAME, MX, TXT, SRV, CAA, NS and ALIAS, which points the apex of a domain at a
    load balancer; the minimum TTL is 30 seconds. To start using Nimbus DNS, change your domain's
    name servers at your registrar to the four ns*.nimbusdns.net servers shown for the zone.

net-010: Private DNS
    Every instance gets an internal hostname of the form <instance-name>.<zone>.internal that
    resolves to its private IP address from anywhere in the same VPC. For custom internal names,
    create a private DNS zone such as corp.example and attach it to one or more VPCs; records in
    a private zone are not visible from the internet. Private zones are free.

net-011: NAT gateways
    A NAT gateway lets instances without a public IP reach the internet, for example to download
    updates, while remaining unreachable from outside. Create it in a public subnet and add a
    default route to it from the private subnets. A NAT gateway costs $0.045 per hour plus $0.01
    per GB processed. Because a gateway lives in one zone, create one per zone for high
    availability.

net-012: Network bandwidth
    The network bandwidth of an instance scales with its size: 1 Gbps per vCPU, up to a maximum
    of 25 Gbps, while the shared-core g2-micro is limited to 0.5 Gbps. The limits apply
    separately to inbound and outbound traffic. Traffic to the internet is additionally limited to
    5 Gbps per instance.

net-013: IPv6
    VPCs can be dual-stack. When you enable IPv6 on a VPC, each subnet receives a /64 range and
    every instance gets a public IPv6 address in addition to its IPv4 addresses. IPv6 addresses
    are free of charge. Load balancers can have IPv6 frontends, and Cloud Firewalls rules apply
    to IPv4 and IPv6 separately, so add rules for both.

net-014: DDoS protection
    All Nimbus Cloud resources are protected against common layer 3 and layer 4 DDoS attacks,
    such as SYN and UDP floods, at no extra charge. Enterprise customers can enable Advanced DDoS
    Protection, which adds layer 7 mitigation for application load balancers, 24/7 access to the
    response team during an attack, and credits for scaling costs caused by an attack.

net-015: Troubleshooting: cannot connect to an instance
    If you cannot reach an instance, first check that it is running and has a public IP or a
    reserved IP. Next, confirm that a Cloud Firewall allows the port (TCP 22 for SSH) from your
    current IP address, and that no firewall inside the operating system, such as ufw or
    firewalld, blocks it. Network > Diagnostics can test whether a port is reachable from the
    internet. If the network configuration itself is broken, log in through the web console.
"""

SECURITY_DOCS = """
sec-001: Organizations and projects
    Nimbus Cloud resources are organized in a hierarchy: an organization contains projects, and
    projects contain resources such as instances and buckets. Billing happens at the
    organization level, while quotas, VPCs and spending limits are set per project. Roles can be
    granted on the organization or on a single project; roles granted on the organization apply
    to all of its projects.

sec-002: Predefined roles
    Nimbus IAM provides five basic roles. Owner has full access, including billing and deleting
    the organization, and Admin can manage all resources and members but not billing. Developer can
    create and manage resources but cannot change IAM, and Viewer has read-only access. Billing
    can manage payment methods and invoices only. Service roles such as compute.admin,
    storage.objectAdmin and storage.objectViewer grant access to a single service.

sec-003: Inviting members to an organization
    Owners and admins can invite people under Organization > Members > Invite by entering their
    email address and choosing a role. The invitation link is valid for 7 days; the invitee must
    sign in with, or create, a Nimbus Cloud account to accept it. An organization can have up to
    500 members. If single sign-on is enforced, invited users must sign in through the identity
    provider.

sec-004: Two-factor authentication
    Two-factor authentication (2FA) protects sign-in with a second factor in addition to the
    password. Nimbus Cloud supports authenticator apps using TOTP and WebAuthn security keys such
    as YubiKey; SMS codes are not supported. Enable 2FA under Account > Security and store the 10
    one-time recovery codes shown during setup. Organization owners can require 2FA for all
    members; members without it cannot access the organization until they enroll.

sec-005: Single sign-on (SSO)
    Single sign-on lets members sign in through your identity provider using SAML 2.0 or OpenID
    Connect. SSO is available on the Team and Enterprise plans and has been tested with Okta,
    Microsoft Entra ID and Google Workspace. After configuring SSO under Organization > Security,
    owners can enforce it so that password sign-in is disabled for members. Automatic user
    provisioning with SCIM is available on Enterprise only.

sec-006: API tokens
    Personal API tokens authenticate the Nimbus CLI, Terraform and direct API calls. Create a
    token under Account > API tokens, choose the projects and the role it is limited to, and set
    an expiration of up to 1 year (90 days by default). Tokens start with nmb_ and are shown only
    once, so store them in a password manager; a lost token cannot be recovered and must be
    replaced with a new one. Revoke tokens at any time from the same page.

sec-007: Service accounts
    Service accounts are identities for applications, CI pipelines and instances rather than
    people. Grant a service account roles like any member, then create a JSON key for it; each
    service account can have up to 10 active keys, and rotating keys every 90 days is
    recommended. When a service account is attached to an instance, applications on the instance
    get short-lived credentials from the metadata service, so no key needs to be stored on disk.

sec-008: Audit logs
    Audit logs record every API call and console action in an organization, including the
    actor, source IP address, action, affected resource and result. Logs are retained for 365
    days and can be searched under Organization > Audit logs or exported continuously to an
    Object Storage bucket. Data access events, such as reading objects from a bucket, are not
    logged by default; enable them per bucket if needed.

sec-009: Nimbus KMS
    Nimbus Key Management Service (KMS) lets you create and control the keys used to encrypt your
    data. Keys are AES-256, never leave the KMS hardware security modules, and can be rotated
    automatically every 90 days. Deleting a key is scheduled with a waiting period of 7 to 30
    days, during which the deletion can be cancelled; afterwards, data encrypted with the key
    cannot be recovered. Each key costs $1 per month plus $0.03 per 10,000 operations.

sec-010: Secrets Manager
    Secrets Manager stores database passwords, API keys and other secrets, encrypted with KMS.
    Each secret is versioned, so you can roll back to a previous value, and access is controlled
    with the secrets.accessor role. Applications on instances read secrets through the API using
    an attached service account. A secret costs $0.40 per month plus $0.05 per 10,000 access
    requests.

sec-011: Password requirements and account lockout
    Passwords for Nimbus Cloud accounts must be at least 12 characters long and cannot match any
    of your previous 5 passwords. After 10 failed sign-in attempts, the account is locked for 30
    minutes. To reset a forgotten password, use Forgot password on the sign-in page; the reset
    link is valid for 1 hour.

sec-012: Restricting console and API access by IP
    Enterprise organizations can restrict access to the console and the API to specific IP
    ranges under Organization > Security > IP allow list. Up to 100 CIDR ranges can be listed,
    and requests from other addresses are rejected with HTTP 403. Owners can designate one
    break-glass account that is exempt from the list, to avoid being locked out.

sec-013: Compliance and certifications
    Nimbus Cloud is certified to ISO/IEC 27001 and audited annually for SOC 2 Type II. Audit
    reports and certificates can be downloaded under Account > Compliance after accepting a
    non-disclosure agreement. A GDPR data processing agreement (DPA) is part of the terms of
    service for all customers. For healthcare data, a HIPAA business associate agreement is
    available on the Enterprise plan only.

sec-014: Reporting a security vulnerability
    If you believe you have found a security vulnerability in Nimbus Cloud, email
    security@nimbuscloud.com, optionally encrypted with the PGP key published at
    nimbuscloud.com/security. The security team acknowledges reports within 2 business days.
    Valid reports are eligible for the bug bounty program, with rewards of up to $10,000
    depending on severity.

sec-015: What to do if credentials are compromised
    If an API token, service account key or password may have leaked, act immediately: revoke
    the token or delete the key, reset the password and enable two-factor authentication. Then
    review the audit logs for actions taken with the credential and look for unexpected
    resources such as new instances. Open a support ticket in the Security category, which is
    handled with priority on every support plan, and tell us about any resulting charges.
"""

ACCOUNT_DOCS = """
acct-001: Creating a Nimbus Cloud account
    Sign up at console.nimbuscloud.com with an email address or a Google or GitHub account.
    Confirm your email address with the link we send, which is valid for 24 hours, then add a
    payment method; a temporary $1 authorization is placed on the card to verify it and released
    within a few days. New accounts start with a personal organization and a default project
    named my-first-project.

acct-002: Support plans
    Nimbus Cloud offers four support plans. Basic is free and includes the documentation, the
    community forum and tickets for billing and account questions. Developer costs $29 per month
    and adds technical tickets by email during business hours. Business costs $299 per month or
    10% of monthly usage, whichever is higher, and adds 24/7 support by phone and chat and the
    Urgent severity. Enterprise support is included in the Enterprise plan and adds a 15-minute
    response for urgent incidents and a technical account manager.

acct-003: Opening a support ticket
    Open a ticket under Support > New ticket and choose a category: Billing, Technical, Account,
    Security or Abuse. Select a severity (Low, Normal, High or Urgent; Urgent requires a Business
    or Enterprise support plan) and include the IDs of the affected resources, the region and
    the time the problem started. You can follow and answer tickets in the console or by replying
    to the notification email.

acct-004: Support response times
    Target first-response times depend on the support plan and the ticket severity. Developer:
    Normal tickets within 12 business hours and High within 8 business hours. Business: Normal
    within 12 hours, High within 4 hours and Urgent within 1 hour, around the clock. Enterprise:
    Urgent within 15 minutes and High within 1 hour. Billing and account tickets on the Basic
    plan are answered within 2 business days.

acct-005: Changing your email address or name
    Change your name and email address under Account > Profile. An email change must be
    confirmed from both the old and the new address. If you no longer have access to the old
    address, contact support from the new one; after identity verification, which can take up to
    5 business days, support will make the change for you.

acct-006: Moving a project to another organization
    Projects can be moved between organizations without downtime: resources keep running and
    their IDs and IP addresses do not change. You need the Owner role in both the source and the
    destination organization. Usage is billed to the source organization until the moment of
    transfer and to the destination afterwards. Reserved commitments and credits stay with the
    source organization.

acct-007: Closing your account
    To close your account, first delete or transfer your organizations, then go to Account >
    Close account. Any usage not yet billed is charged on a final invoice. After closure there is
    a 30-day grace period during which you can reactivate the account by contacting support;
    after that the closure is permanent, and the email address can be used to register a new
    account.

acct-008: Data retention after deletion and account closure
    Deleted resources are erased within 24 hours and cannot be restored by support; snapshots
    and backups are only kept if you did not delete them. When an account is closed, its
    resources are stopped immediately and kept during the 30-day grace period, then permanently
    deleted together with their backups and snapshots. Invoices and billing records are retained
    for 10 years to meet legal obligations.

acct-009: Service status and incident notifications
    The current status of every Nimbus Cloud service and region is published at
    status.nimbuscloud.com. You can subscribe to updates by email, SMS, RSS or webhook and filter
    them by region and service. For every major incident, a public post-incident report is
    published within 5 business days.

acct-010: Regions and zones
    Nimbus Cloud operates six regions: fra1 (Frankfurt), ams1 (Amsterdam), lon1 (London), nyc1
    (New York), sfo1 (San Francisco) and sgp1 (Singapore). Each region has three zones, named
    with a suffix such as fra1-a, fra1-b and fra1-c, which are physically separate data centers.
    Data stays in the region where you create it unless you copy or replicate it elsewhere.

acct-011: Notification contacts
    Each organization has three contacts: the billing contact receives invoices and payment
    notices, the technical contact receives maintenance and incident notices, and the security
    contact receives security advisories and abuse reports. Set them under Organization >
    Contacts. You can opt out of product newsletters, but not of billing, maintenance and
    security notices.

acct-012: Installing the Nimbus CLI
    The nimbus command-line tool is available for macOS (brew install nimbus-cli), Debian and
    Ubuntu (apt install nimbus-cli from the Nimbus apt repository) and Windows (MSI installer).
    After installation, run nimbus auth login to sign in through the browser, or set the
    NIMBUS_TOKEN environment variable to an API token. Settings are stored in
    ~/.config/nimbus/config.toml, and you can switch between accounts with named profiles using
    --profile.

acct-013: Terraform provider
    The official Terraform provider nimbuscloud/nimbus manages instances, volumes, buckets, VPCs,
    firewalls, load balancers, DNS records and IAM bindings. Configure it with an API token
    through the NIMBUS_TOKEN environment variable and a default region in the provider block.
    Existing resources can be brought under Terraform management with terraform import.

acct-014: Reporting abuse
    To report spam, phishing, malware or attacks coming from Nimbus Cloud IP addresses, use the
    form at nimbuscloud.com/abuse or email abuse@nimbuscloud.com with the IP address, timestamps
    and evidence such as log excerpts or email headers. Reports are reviewed within 24 hours.
    Customers whose resources are involved are notified and may have resources stopped or their
    accounts suspended.

acct-015: Community forum and documentation feedback
    The community forum at community.nimbuscloud.com is the place to ask how-to questions, share
    configurations and vote on feature requests. Nimbus engineers review new forum posts on
    business days and mark verified answers. To report a mistake in the documentation, use the
    Was this page helpful? link at the bottom of each article.
"""

# New in demo-v2: the launch of Nimbus Functions (serverless), plus its pricing page.
FUNCTIONS_DOCS = """
fn-001: Nimbus Functions overview
    Nimbus Functions runs your code in response to events without provisioning or managing
    servers. Functions can be written in Python 3.12, Node.js 20 or Go 1.22 and are triggered by
    HTTP requests, schedules or Object Storage events. You pay only for requests and for the
    compute time your code uses. Nimbus Functions is available in fra1, nyc1 and sgp1.

fn-002: Deploying a function
    Deploy a function from a source directory with nimbus functions deploy resize-image --runtime
    python3.12 --entry main.handler --source ./src --region fra1. The deployment package can be
    up to 50 MB zipped and 250 MB unzipped, including the dependencies listed in requirements.txt
    or package.json. Every deployment creates an immutable, numbered version, and traffic can be
    shifted between versions with aliases such as prod and staging.

fn-003: Function limits
    Function memory can be set from 128 MB to 4 GB in 64 MB steps, and CPU is allocated in
    proportion to memory. The default timeout is 60 seconds and the maximum is 15 minutes. Each
    region allows 1,000 concurrent executions per project by default, and request and response
    payloads are limited to 6 MB. Request higher limits under Account > Quotas.

fn-004: Function triggers
    An HTTP trigger gives a function a public HTTPS endpoint at
    https://<function>-<project>.fn.nimbuscloud.com; enable authentication on the trigger to
    require an API token. Schedule triggers use cron expressions in UTC with a minimum interval
    of 1 minute. Storage triggers run a function when objects are created or deleted in a
    bucket, optionally filtered by prefix and suffix; events are delivered at least once and
    retried up to 3 times on failure.

fn-005: Configuration, secrets and permissions for functions
    Set configuration as environment variables when deploying, with --env KEY=value; all
    variables together can be up to 4 KB. Do not put passwords in plain environment variables:
    reference a Secrets Manager secret as secret://<name>/<version> instead, and it is resolved
    when a new function instance starts. Each function runs as a service account, which has no
    permissions by default; grant it roles such as secrets.accessor or storage.objectViewer for
    the resources it needs.

fn-006: Cold starts and provisioned concurrency
    When a function has not run recently, or when traffic increases, a new function instance
    must start before it can handle a request. These cold starts typically add 200 to 800 ms,
    depending on the runtime and the package size. To avoid them for latency-sensitive functions,
    configure provisioned concurrency, which keeps a chosen number of instances initialized and
    is billed for as long as it is enabled.

fn-007: Function logs and metrics
    Anything a function writes to stdout or stderr is collected in Logs and kept for 30 days,
    searchable by function, version and request ID. The Monitoring tab shows invocations, errors,
    throttles and duration percentiles (p50, p95 and p99) for each function. Alerts can notify
    you by email or webhook, for example when the error rate exceeds 5% over 10 minutes.
"""

FUNCTIONS_BILLING_DOCS = """
bill-016: Nimbus Functions pricing
    Nimbus Functions is billed per request and per GB-second of compute time: $0.20 per million
    requests and $0.0000166 per GB-second, with duration rounded up to the nearest millisecond.
    Each organization gets 1 million requests and 400,000 GB-seconds free every month.
    Provisioned concurrency costs $0.0000041 per GB-second while it is enabled. Function usage
    appears in the cost explorer under the service name Functions.
"""


def parse_docs(cluster: str, block: str) -> list[Doc]:
    """Parse a topic block ("doc-id: Title" + indented text, blank-line separated)."""
    docs = []
    for chunk in block.strip().split("\n\n"):
        header, *body = chunk.strip().splitlines()
        doc_id, title = header.split(": ", 1)
        text = " ".join(" ".join(body).split())
        docs.append(Doc(doc_id.strip(), cluster, title.strip(), text))
    return docs


CORPUS_V1: list[Doc] = [
    *parse_docs("billing", BILLING_DOCS),
    *parse_docs("storage", STORAGE_DOCS),
    *parse_docs("compute", COMPUTE_DOCS),
    *parse_docs("networking", NETWORKING_DOCS),
    *parse_docs("security", SECURITY_DOCS),
    *parse_docs("account", ACCOUNT_DOCS),
]
CORPUS_V2_NEW: list[Doc] = [
    *parse_docs("billing", FUNCTIONS_BILLING_DOCS),
    *parse_docs("serverless", FUNCTIONS_DOCS),
]


# --------------------------------------------------------------------------------------------
# Questions of demo-v1: 41 standalone questions and 5 three-turn sessions.
# --------------------------------------------------------------------------------------------

QUERIES_V1: list[Query] = [
    Query(
        "q001",
        "When is my monthly invoice generated?",
        "Invoices are generated on the 1st of each month for the previous month's usage and are "
        "emailed to the organization's billing contact.",
        {"bill-001": 3, "acct-011": 1, "bill-014": 0},
    ),
    Query(
        "q002",
        "Can I pay with PayPal?",
        "No. Nimbus Cloud accepts Visa, Mastercard and American Express cards, SEPA direct debit "
        "for EU billing addresses and bank transfer on Enterprise; PayPal is not accepted.",
        {"bill-004": 3, "bill-005": 0},
    ),
    Query(
        "q003",
        "How much does the Team plan cost and what does it include?",
        "The Team plan costs $49 per month per organization and includes up to 100 running "
        "instances, single sign-on and Developer support.",
        {"bill-002": 3, "bill-015": 1, "sec-005": 1},
    ),
    Query(
        "q004",
        "Do budgets automatically stop my resources when I go over them?",
        "No. Budgets only send alerts (at 50%, 90% and 100% of the amount, and on forecast "
        "overruns); to enforce a hard cap, set a project spending limit, which stops the "
        "project's running instances.",
        {"bill-009": 3, "bill-010": 2},
    ),
    Query(
        "q005",
        "How do I enable two-factor authentication for my account?",
        "Go to Account > Security and enable 2FA with a TOTP authenticator app or a WebAuthn "
        "security key (SMS is not supported), then store the 10 recovery codes shown during setup.",
        {"sec-004": 3, "sec-015": 1, "sec-011": 0},
    ),
    Query(
        "q006",
        "What is the maximum size of a single object in Object Storage?",
        "A single object can be up to 5 TB; one PUT request uploads up to 5 GB, so larger objects "
        "need multipart upload.",
        {"stor-001": 3, "stor-012": 1},
    ),
    Query(
        "q007",
        "Can I shrink a block volume?",
        "No. A block volume can only be made larger; to use a smaller disk, create a new volume "
        "and copy the data.",
        {"stor-007": 3, "stor-006": 1, "stor-010": 0},
    ),
    Query(
        "q008",
        "How long does it take to restore an object from the Archive storage class?",
        "A Standard restore completes within 12 hours and a cheaper Bulk restore within 48 hours.",
        {"stor-015": 3, "stor-002": 1},
    ),
    Query(
        "q009",
        "What is the default GPU quota, and how do I get access to GPU instances?",
        "The default GPU quota is 0 on all plans; request an increase under Account > Quotas "
        "before creating a GPU instance (GPU requests require at least one paid invoice).",
        {"comp-008": 3, "comp-011": 2},
    ),
    Query(
        "q010",
        "Which user name do I use to SSH into an Ubuntu instance?",
        "Use the user ubuntu, for example ssh ubuntu@<public-ip>, with the SSH key added before "
        "the instance was created.",
        {"comp-006": 3, "net-015": 1},
    ),
    Query(
        "q011",
        "How much warning do I get before a spot instance is reclaimed?",
        "30 seconds; the warning is published on the instance metadata endpoint "
        "/v1/spot/termination-time.",
        {"comp-010": 3, "comp-012": 1},
    ),
    Query(
        "q012",
        "Where can I find the output of my user data script?",
        "On Linux images the output of the user data script is written to "
        "/var/log/cloud-init-output.log.",
        {"comp-013": 3},
    ),
    Query(
        "q013",
        "How many usable IP addresses does a /24 subnet have?",
        "251, because the first four addresses and the last address of every subnet are reserved.",
        {"net-002": 3, "net-001": 1},
    ),
    Query(
        "q014",
        "Is traffic between two peered VPCs in different regions charged?",
        "Yes. Peering traffic between regions costs $0.02 per GB; within a region it is free.",
        {"net-007": 3, "bill-013": 1},
    ),
    Query(
        "q015",
        "How do I get a free TLS certificate for my load balancer?",
        "Use a managed certificate: it is issued by Let's Encrypt at no cost and renewed "
        "automatically 30 days before expiry, as long as the domain's DNS points to the load "
        "balancer.",
        {"net-006": 3, "net-005": 1},
    ),
    Query(
        "q016",
        "How do I point my domain to Nimbus DNS?",
        "Create a hosted zone for the domain and change the name servers at your registrar to the "
        "four ns*.nimbusdns.net servers shown for the zone.",
        {"net-009": 3, "net-010": 0},
    ),
    Query(
        "q017",
        "What is the difference between the Developer and Viewer roles?",
        "Developer can create and manage resources but cannot change IAM, while Viewer has "
        "read-only access.",
        {"sec-002": 3, "sec-001": 1},
    ),
    Query(
        "q018",
        "Is single sign-on available on the Starter plan?",
        "No. Single sign-on (SAML 2.0 or OpenID Connect) is only available on the Team and "
        "Enterprise plans.",
        {"sec-005": 3, "bill-002": 2, "sec-004": 0},
    ),
    Query(
        "q019",
        "How long are audit logs retained?",
        "Audit logs are retained for 365 days; they can be exported continuously to an Object "
        "Storage bucket to keep them longer.",
        {"sec-008": 3, "acct-008": 2},
    ),
    Query(
        "q020",
        "What happens to data encrypted with a KMS key after I delete the key?",
        "Key deletion is scheduled with a 7 to 30 day waiting period during which it can be "
        "cancelled; after that, data encrypted with the key cannot be recovered.",
        {"sec-009": 3, "stor-011": 1},
    ),
    Query(
        "q021",
        "Can I download your SOC 2 report?",
        "Yes. SOC 2 Type II reports can be downloaded under Account > Compliance after accepting "
        "a non-disclosure agreement.",
        {"sec-013": 3},
    ),
    Query(
        "q022",
        "How fast does support respond to an urgent ticket on the Business plan?",
        "On the Business support plan, Urgent tickets get a first response within 1 hour, around "
        "the clock.",
        {"acct-004": 3, "acct-002": 1, "acct-003": 1},
    ),
    Query(
        "q023",
        "In which regions is Nimbus Cloud available?",
        "In six regions: fra1 (Frankfurt), ams1 (Amsterdam), lon1 (London), nyc1 (New York), sfo1 "
        "(San Francisco) and sgp1 (Singapore), each with three zones.",
        {"acct-010": 3, "comp-011": 0},
    ),
    Query(
        "q024",
        "How do I sign in with the Nimbus CLI?",
        "Run nimbus auth login to sign in through the browser, or set the NIMBUS_TOKEN "
        "environment variable to an API token.",
        {"acct-012": 3, "sec-006": 2, "acct-013": 1},
    ),
    Query(
        "q025",
        "Where can I check whether there is an ongoing outage?",
        "On status.nimbuscloud.com, which shows the status of every service and region; you can "
        "subscribe to updates by email, SMS, RSS or webhook.",
        {"acct-009": 3, "comp-015": 0},
    ),
    Query(
        "q026",
        "Who receives maintenance notifications for our organization?",
        "The organization's technical contact, set under Organization > Contacts; maintenance "
        "notices cannot be opted out of.",
        {"acct-011": 3, "comp-014": 1},
    ),
    Query(
        "q027",
        "What do I get for free as a new customer?",
        "$200 of trial credit valid for 60 days, plus an always-free tier with one g2-micro "
        "instance for 750 hours per month, 5 GB of Standard object storage and 100 GB of internet "
        "egress per month.",
        {"bill-003": 3, "bill-008": 1, "bill-013": 1},
    ),
    Query(
        "q028",
        "How much does internet egress cost after the free allowance?",
        "Outbound transfer to the internet costs $0.01 per GB after the first 100 GB each month; "
        "inbound transfer is free.",
        {"bill-013": 3, "bill-003": 1},
    ),
    Query(
        "q029",
        "Can I get a refund for a GPU instance I forgot to turn off?",
        "Yes, once: Nimbus Cloud grants a one-time goodwill refund of up to $500 per organization "
        "for unintended usage; open a Billing ticket within 30 days of the invoice date.",
        {"bill-012": 3, "comp-011": 0},
    ),
    Query(
        "q030",
        "If I stop an instance, what am I still paying for, and does it keep its public IP?",
        "A stopped instance is not charged for vCPU and memory, but its volumes, snapshots and "
        "reserved IPs are still billed. Its ephemeral public IP is released on stop; attach a "
        "reserved IP (which costs $0.005 per hour while the instance is stopped) to keep the "
        "address.",
        {"bill-006": 3, "comp-003": 3, "net-004": 2},
    ),
    Query(
        "q031",
        "What uptime does the Enterprise plan guarantee for instances, and what do I get if it is "
        "missed?",
        "The Enterprise plan guarantees 99.99% monthly uptime for multi-zone deployments. If it "
        "is missed, you get a service credit of 10% of the affected instances' monthly cost (25% "
        "below 99.0%, 100% below 95.0%), claimed within 30 days.",
        {"comp-015": 3, "bill-002": 2},
    ),
    Query(
        "q032",
        "How can I keep old versions of my objects, but only for 30 days?",
        "Enable versioning on the bucket and add a lifecycle rule that deletes noncurrent "
        "versions after 30 days.",
        {"stor-004": 3, "stor-003": 3},
    ),
    Query(
        "q033",
        "How should a CI pipeline get permission to upload files to a bucket?",
        "Create a service account for the pipeline, grant it the storage.objectAdmin role and "
        "give the pipeline a JSON key for it (rotated every 90 days), instead of using a personal "
        "API token.",
        {"sec-007": 3, "sec-002": 2, "sec-006": 1},
    ),
    Query(
        "q034",
        "What would it cost to replicate 500 GB of new objects to a bucket in another region?",
        "Replication is charged as inter-region transfer at $0.02 per GB, so about $10 for 500 "
        "GB, plus the storage of the copies in the destination bucket.",
        {"stor-014": 3, "bill-013": 2, "stor-002": 1},
    ),
    Query(
        "q035",
        "Why can't I SSH into my new instance?",
        "Check that the instance is running and has a public IP, that a Cloud Firewall allows TCP "
        "22 from your IP, that no OS firewall blocks it, and that you use the right user and key; "
        "the web console still works if networking is broken.",
        {"net-015": 3, "net-003": 2, "comp-006": 2},
    ),
    Query(
        "q036",
        "How many instances can I run on the Starter plan?",
        "Up to 10 running instances per region.",
        {"bill-002": 3, "comp-008": 2},
    ),
    Query(
        "q037",
        "Can I move a project to another organization without downtime?",
        "Yes. Resources keep running and keep their IDs and IP addresses; you need the Owner role "
        "in both organizations, and billing switches at the moment of transfer.",
        {"acct-006": 3, "sec-001": 1},
    ),
    Query(
        "q038",
        "What happens to my GPU instance during host maintenance?",
        "GPU instances cannot be live-migrated, so they are rebooted; you are notified at least 7 "
        "days in advance and can reschedule the reboot within the maintenance window.",
        {"comp-014": 3, "comp-011": 1},
    ),
    Query(
        "q039",
        "How can I turn on 2FA for my Nimbus account?",
        "Go to Account > Security and enable 2FA with a TOTP authenticator app or a WebAuthn "
        "security key (SMS is not supported), then store the 10 recovery codes shown during setup.",
        {"sec-004": 3, "sec-015": 1, "sec-011": 0},
    ),
    Query(
        "q040",
        "What's the largest object I can store in Object Storage?",
        "A single object can be up to 5 TB; one PUT request uploads up to 5 GB, so larger objects "
        "need multipart upload.",
        {"stor-001": 3, "stor-012": 1},
    ),
    Query(
        "q041",
        "Is it possible to reduce the size of a block volume?",
        "No. A block volume can only be made larger; to use a smaller disk, create a new volume "
        "and copy the data.",
        {"stor-007": 3, "stor-006": 1, "stor-010": 0},
    ),
    # Session s01: automated backups.
    Query(
        "q042",
        "Does Nimbus back up my instances automatically?",
        "Only if you enable automated backups on the instance; they then take a daily image of "
        "all attached volumes during a backup window you choose.",
        {"stor-009": 3, "stor-008": 1, "acct-008": 0},
        "s01",
        1,
    ),
    Query(
        "q043",
        "How long are they kept?",
        "Automated backups are kept for 7 days by default; retention can be set from 1 to 35 days.",
        {"stor-009": 3, "acct-008": 0, "sec-008": 0},
        "s01",
        2,
    ),
    Query(
        "q044",
        "And what do they cost?",
        "Enabling automated backups adds 20% to the instance's price.",
        {"stor-009": 3, "stor-008": 1},
        "s01",
        3,
    ),
    # Session s02: API tokens.
    Query(
        "q045",
        "How do I create an API token for the Nimbus CLI?",
        "Create it under Account > API tokens, choosing the projects and role it is limited to "
        "and an expiration; then use it with nimbus auth or the NIMBUS_TOKEN environment variable.",
        {"sec-006": 3, "acct-012": 2},
        "s02",
        1,
    ),
    Query(
        "q046",
        "How long is it valid by default?",
        "API tokens expire after 90 days by default; the maximum expiration is 1 year.",
        {"sec-006": 3, "sec-007": 0},
        "s02",
        2,
    ),
    Query(
        "q047",
        "What if I lose it?",
        "A token is shown only once and cannot be recovered: revoke it under Account > API tokens "
        "and create a new one.",
        {"sec-006": 3, "sec-015": 2},
        "s02",
        3,
    ),
    # Session s03: a failed payment.
    Query(
        "q048",
        "My card payment failed. What happens now?",
        "Nimbus Cloud retries the charge after 3 and 7 days and emails the billing contact; if "
        "the invoice is 14 days past due, no new resources can be created.",
        {"bill-005": 3, "bill-004": 1, "bill-012": 0},
        "s03",
        1,
    ),
    Query(
        "q049",
        "When would my instances be stopped?",
        "At 30 days past due all running instances are stopped, and at 60 days past due the "
        "resources are permanently deleted.",
        {"bill-005": 3, "bill-010": 0},
        "s03",
        2,
    ),
    Query(
        "q050",
        "How do I fix it?",
        "Update the card under Billing > Payment methods and click Retry payment on the unpaid "
        "invoice.",
        {"bill-005": 3, "bill-004": 2},
        "s03",
        3,
    ),
    # Session s04: the Archive storage class.
    Query(
        "q051",
        "What is the cheapest storage class in Object Storage?",
        "Archive, at $0.002 per GB-month.",
        {"stor-002": 3, "stor-015": 1},
        "s04",
        1,
    ),
    Query(
        "q052",
        "Is there a minimum storage duration for it?",
        "Yes, objects in the Archive class have a 180-day minimum storage duration.",
        {"stor-002": 3, "stor-015": 0},
        "s04",
        2,
    ),
    Query(
        "q053",
        "How do I get my data back out of it?",
        "Restore the objects from the console or with the RestoreObject API and choose how long "
        "the copy stays available (1 to 30 days); a Standard restore takes up to 12 hours, a Bulk "
        "restore up to 48 hours.",
        {"stor-015": 3, "stor-002": 2},
        "s04",
        3,
    ),
    # Session s05: closing an account.
    Query(
        "q054",
        "How do I close my Nimbus Cloud account?",
        "Delete or transfer your organizations, then go to Account > Close account; any usage not "
        "yet billed is charged on a final invoice.",
        {"acct-007": 3, "acct-008": 1},
        "s05",
        1,
    ),
    Query(
        "q055",
        "Can I change my mind after closing it?",
        "Yes, within the 30-day grace period you can reactivate the account by contacting "
        "support; after that the closure is permanent.",
        {"acct-007": 3, "acct-008": 2},
        "s05",
        2,
    ),
    Query(
        "q056",
        "What happens to my invoices afterwards?",
        "Invoices and billing records are retained for 10 years to meet legal obligations, even "
        "after the account is closed.",
        {"acct-008": 3, "bill-001": 1},
        "s05",
        3,
    ),
]

# --------------------------------------------------------------------------------------------
# Questions added in demo-v2 (mostly about Nimbus Functions) and one more session.
# --------------------------------------------------------------------------------------------

QUERIES_V2_NEW: list[Query] = [
    Query(
        "q057",
        "Which programming languages does Nimbus Functions support?",
        "Python 3.12, Node.js 20 and Go 1.22.",
        {"fn-001": 3, "fn-002": 1},
    ),
    Query(
        "q058",
        "What is the maximum timeout for a function?",
        "A function can run for at most 15 minutes; the default timeout is 60 seconds.",
        {"fn-003": 3, "fn-006": 0},
    ),
    Query(
        "q059",
        "How much does Nimbus Functions cost?",
        "$0.20 per million requests plus $0.0000166 per GB-second; the first 1 million requests "
        "and 400,000 GB-seconds each month are free.",
        {"bill-016": 3, "fn-001": 1},
    ),
    Query(
        "q060",
        "How do I run a function every night at 2 am?",
        "Add a schedule trigger with a cron expression such as 0 2 * * *; schedules are evaluated "
        "in UTC and can run at most once a minute.",
        {"fn-004": 3, "fn-001": 1},
    ),
    Query(
        "q061",
        "How can I reduce the cold start latency of my function?",
        "Configure provisioned concurrency, which keeps a chosen number of instances initialized "
        "(billed while enabled); cold starts otherwise add 200 to 800 ms depending on runtime and "
        "package size.",
        {"fn-006": 3, "bill-016": 1, "fn-003": 0},
    ),
    Query(
        "q062",
        "How do I use a database password in a function without putting it in an environment "
        "variable?",
        "Store it in Secrets Manager, reference it as secret://<name>/<version> in the function's "
        "configuration and grant the function's service account the secrets.accessor role.",
        {"fn-005": 3, "sec-010": 2, "sec-007": 1},
    ),
    Query(
        "q063",
        "Is Nimbus Functions available in Singapore?",
        "Yes. Nimbus Functions is available in fra1, nyc1 and sgp1 (Singapore).",
        {"fn-001": 3, "acct-010": 1},
    ),
    Query(
        "q064",
        "What is the size limit for a function deployment package?",
        "50 MB zipped and 250 MB unzipped, including dependencies.",
        {"fn-002": 3, "fn-003": 1},
    ),
    Query(
        "q065",
        "How long are function logs kept?",
        "Function logs are kept for 30 days.",
        {"fn-007": 3, "sec-008": 0},
    ),
    Query(
        "q066",
        "Can a function run when a file is uploaded to a bucket, and what happens if it fails?",
        "Yes, a storage trigger runs the function when objects are created, optionally filtered "
        "by prefix and suffix. Events are delivered at least once and retried up to 3 times on "
        "failure.",
        {"fn-004": 3, "fn-001": 1, "stor-003": 0},
    ),
    Query(
        "q067",
        "How much does it cost to use Nimbus Functions?",
        "$0.20 per million requests plus $0.0000166 per GB-second; the first 1 million requests "
        "and 400,000 GB-seconds each month are free.",
        {"bill-016": 3, "fn-001": 1},
    ),
    Query(
        "q068",
        "How can I stop people outside our office network from signing in to the console?",
        "On the Enterprise plan, add your office ranges to the IP allow list under Organization > "
        "Security (up to 100 CIDR ranges); other addresses get HTTP 403, except one break-glass "
        "account.",
        {"sec-012": 3, "net-003": 0},
    ),
    Query(
        "q069",
        "What is the difference between a network and an application load balancer?",
        "A network load balancer works at layer 4 (TCP and UDP); an application load balancer "
        "works at layer 7 and can route HTTP and HTTPS requests by host and path.",
        {"net-005": 3, "net-006": 1},
    ),
    Query(
        "q070",
        "How do I report a phishing site hosted on Nimbus Cloud?",
        "Use the form at nimbuscloud.com/abuse or email abuse@nimbuscloud.com with the IP "
        "address, timestamps and evidence; reports are reviewed within 24 hours.",
        {"acct-014": 3, "sec-014": 0},
    ),
    Query(
        "q071",
        "Can instances without a public IP download OS updates?",
        "Yes, through a NAT gateway in a public subnet with a default route from the private "
        "subnets; it costs $0.045 per hour plus $0.01 per GB processed.",
        {"net-011": 3, "net-004": 0},
    ),
    Query(
        "q072",
        "How do I rotate a service account key?",
        "Create a new JSON key for the service account (up to 10 can be active), switch your "
        "application to it and then delete the old key; rotating every 90 days is recommended.",
        {"sec-007": 3, "sec-015": 1},
    ),
    Query(
        "q073",
        "How do I encrypt a bucket with my own key, and what does the key cost?",
        "Select a customer-managed Nimbus KMS key when creating the bucket; each key costs $1 per "
        "month plus $0.03 per 10,000 operations.",
        {"stor-011": 3, "sec-009": 3},
    ),
    # Session s06: getting started with Nimbus Functions.
    Query(
        "q074",
        "Can I run Python code on Nimbus without managing servers?",
        "Yes, with Nimbus Functions, which runs Python 3.12 (as well as Node.js 20 and Go 1.22) "
        "in response to HTTP requests, schedules or Object Storage events.",
        {"fn-001": 3, "comp-002": 0},
        "s06",
        1,
    ),
    Query(
        "q075",
        "How much memory can it use?",
        "A function can have 128 MB to 4 GB of memory, in 64 MB steps, with CPU allocated in "
        "proportion.",
        {"fn-003": 3},
        "s06",
        2,
    ),
    Query(
        "q076",
        "And how is that billed?",
        "Per request ($0.20 per million) and per GB-second of memory times duration ($0.0000166), "
        "with 1 million requests and 400,000 GB-seconds free each month.",
        {"bill-016": 3, "fn-003": 1},
        "s06",
        3,
    ),
]

# Questions whose answer needs two documents, and near-duplicate phrasings (same judgments).
HARD_QUERY_IDS = ("q030", "q031", "q032", "q033", "q034", "q035", "q073")
NEAR_DUPLICATES = (("q039", "q005"), ("q040", "q006"), ("q041", "q007"), ("q067", "q059"))

QREL_CHANGES_V2: list[QrelChange] = [
    QrelChange(
        "q014",
        "bill-013",
        3,
        "the data transfer pricing page states the $0.02 per GB price for VPC peering between "
        "regions verbatim",
    ),
    QrelChange(
        "q008",
        "stor-002",
        2,
        "the storage classes page gives the 12-hour restore time; only the Bulk option is missing",
    ),
    QrelChange(
        "q019",
        "acct-008",
        0,
        "the data retention page is about deleted resources and invoices, not audit logs",
    ),
    QrelChange(
        "q035",
        "comp-007",
        2,
        "missing judgment: the web console is the documented way in when SSH is broken",
    ),
    QrelChange(
        "q027",
        "bill-016",
        1,
        "new document judged for an existing question: Functions has its own free allowance",
    ),
]

ANSWER_CHANGES_V2: list[AnswerChange] = [
    AnswerChange(
        "q036",
        "Up to 10 running instances in the organization; each project is also limited by the "
        "default quota of 24 vCPUs per region.",
        "the limit of 10 running instances is per organization, not per region",
    ),
]


# --------------------------------------------------------------------------------------------
# Logged real-user interactions. The retrieved documents are the BM25 top 5 over the corpus of
# the time; shown_doc_id is the document the user actually opened.
# --------------------------------------------------------------------------------------------

LOGS_V1: list[LogEntry] = [
    LogEntry(
        "log-0001",
        "2026-11-02T08:14:37Z",
        "u03",
        "how do i download my invoice as pdf",
        "You can download invoices as PDF or CSV under Billing > Invoices. A new invoice is "
        "generated on the 1st of each month for the previous month's usage.",
        "bill-001",
    ),
    LogEntry(
        "log-0002",
        "2026-11-02T08:16:05Z",
        "u03",
        "when does my card get charged",
        "Cards on file are charged automatically on the 3rd of each month for the invoice "
        "generated on the 1st.",
        "bill-001",
    ),
    LogEntry(
        "log-0003",
        "2026-11-02T10:41:22Z",
        "u07",
        "is paypal accepted?",
        "PayPal is not accepted. You can pay with Visa, Mastercard or American Express, by SEPA "
        "direct debit if your billing address is in the EU, or by bank transfer on the Enterprise "
        "plan.",
        "bill-004",
    ),
    LogEntry(
        "log-0004",
        "2026-11-02T13:03:51Z",
        "u11",
        "alert me when spending goes over 100 dollars",
        "Create a budget of $100 under Billing > Budgets. You will get an email and webhook alert "
        "at 50%, 90% and 100% of the amount.",
        "bill-009",
    ),
    LogEntry(
        "log-0005",
        "2026-11-02T13:05:10Z",
        "u11",
        "can it shut everything down at the limit",
        "When your budget reaches 100%, Nimbus Cloud sends an alert by email and webhook so you "
        "can take action.",
        "bill-010",
    ),
    LogEntry(
        "log-0006",
        "2026-11-03T07:52:44Z",
        "u02",
        "where to enter vat number",
        "Enter your VAT ID under Billing > Tax settings. With a valid EU VAT ID, the "
        "reverse-charge mechanism applies from your next invoice.",
        "bill-011",
    ),
    LogEntry(
        "log-0007",
        "2026-11-03T09:27:18Z",
        "u15",
        "forgot to delete a gpu server and got a huge bill. refund?",
        "Nimbus Cloud grants a one-time goodwill refund of up to $500 per organization for "
        "unintended usage such as a forgotten GPU instance. Open a support ticket in the Billing "
        "category within 30 days of the invoice date.",
        "bill-012",
    ),
    LogEntry(
        "log-0008",
        "2026-11-03T09:31:02Z",
        "u15",
        "do i pay for a stopped server",
        "A stopped instance is not charged for vCPU and memory, but its block volumes, snapshots "
        "and reserved IPs are still billed until you delete them.",
        "bill-006",
    ),
    LogEntry(
        "log-0009",
        "2026-11-03T14:12:55Z",
        "u21",
        "what is the s3 compatible endpoint",
        "Object Storage is compatible with the S3 API. Point your S3 tools at "
        "https://<region>.objects.nimbuscloud.com, for example "
        "https://fra1.objects.nimbuscloud.com.",
        "stor-001",
    ),
    LogEntry(
        "log-0010",
        "2026-11-03T14:20:31Z",
        "u21",
        "uploading a 20gb file fails",
        "A single PUT request can upload at most 5 GB. Upload larger files with multipart upload, "
        "which most S3 tools use automatically for big files.",
        "stor-001",
    ),
    LogEntry(
        "log-0011",
        "2026-11-04T08:05:09Z",
        "u05",
        "move logs older than 90 days to archive automatically",
        "Add a lifecycle rule to the bucket that moves objects to the Archive class after 90 "
        "days, filtered by a prefix such as logs/ if needed.",
        "stor-003",
    ),
    LogEntry(
        "log-0012",
        "2026-11-04T08:09:47Z",
        "u05",
        "how long to get archived files back",
        "Archived objects must be restored first. A Standard restore completes within 12 hours, "
        "and a cheaper Bulk restore within 48 hours.",
        "stor-015",
    ),
    LogEntry(
        "log-0013",
        "2026-11-04T11:38:26Z",
        "u09",
        "make bucket public for website images",
        "Add a bucket policy that allows public reads, or set the public-read ACL on individual "
        "objects. This only works if Block Public Access is not enabled for your organization.",
        "stor-005",
    ),
    LogEntry(
        "log-0014",
        "2026-11-04T11:44:13Z",
        "u09",
        "temporary download link for a private file",
        "Generate a presigned URL for the object. Presigned URLs can be valid for up to 7 days.",
        "stor-005",
    ),
    LogEntry(
        "log-0015",
        "2026-11-04T16:57:40Z",
        "u12",
        "disk full, how do i make the volume bigger",
        "Increase the volume size in the console; this works while it is attached. Then extend "
        "the partition and file system inside the instance, for example with growpart and "
        "resize2fs for ext4.",
        "stor-007",
    ),
    LogEntry(
        "log-0016",
        "2026-11-04T17:02:18Z",
        "u12",
        "should i take a snapshot first",
        "Taking a snapshot before resizing is a good precaution. Snapshots are incremental, "
        "crash-consistent copies of the volume, billed at $0.03 per GB-month.",
        "stor-008",
    ),
    LogEntry(
        "log-0017",
        "2026-11-05T10:21:36Z",
        "u18",
        "shared nfs folder for several servers",
        "Use File Shares: managed NFSv4.1 storage that several instances in the same VPC can "
        "mount at the same time.",
        "stor-010",
    ),
    LogEntry(
        "log-0018",
        "2026-11-05T12:48:03Z",
        "u04",
        "which instance has 64gb ram",
        "g2-xlarge has 16 vCPUs and 64 GB of memory. Memory-optimized m2 instances have 8 GB per "
        "vCPU, so an 8-vCPU m2 instance also has 64 GB.",
        "comp-001",
    ),
    LogEntry(
        "log-0019",
        "2026-11-05T12:55:29Z",
        "u04",
        "upgrade instance size without reinstalling",
        "Stop the instance, choose a new type under Compute > Instances > [instance] > Resize and "
        "start it again. Your volumes and private IP are kept, and the change takes about 2 "
        "minutes.",
        "comp-004",
    ),
    LogEntry(
        "log-0020",
        "2026-11-05T15:10:44Z",
        "u14",
        "ssh says permission denied (publickey)",
        "Check that you connect with the right user (ubuntu, debian or rocky depending on the "
        "image) and the private key that matches the key added when the instance was created. If "
        "you lost the key, use Reset access on the instance page.",
        "comp-006",
    ),
    LogEntry(
        "log-0021",
        "2026-11-05T15:26:58Z",
        "u14",
        "now ssh just times out",
        "A timeout usually means the port is blocked. Make sure a Cloud Firewall allows TCP 22 "
        "from your current IP and that no OS firewall such as ufw blocks it; Network > "
        "Diagnostics can test the port.",
        "net-015",
    ),
    LogEntry(
        "log-0022",
        "2026-11-06T09:03:15Z",
        "u19",
        "need more than 24 vcpus",
        "24 vCPUs per region is the default quota on the Starter plan. Request an increase under "
        "Account > Quotas; most requests are reviewed within 1 business day.",
        "comp-008",
    ),
    LogEntry(
        "log-0023",
        "2026-11-06T09:07:41Z",
        "u19",
        "a100 in london?",
        "GPU instances, including gpu-a100, are available in all regions once your GPU quota has "
        "been increased.",
        "comp-011",
    ),
    LogEntry(
        "log-0024",
        "2026-11-06T13:34:20Z",
        "u23",
        "cheapest machines for ci runners",
        "Spot instances cost up to 70% less than on-demand and suit CI runners, but they can be "
        "reclaimed with a 30-second warning.",
        "comp-010",
    ),
    LogEntry(
        "log-0025",
        "2026-11-06T13:40:02Z",
        "u23",
        "install docker automatically when the server starts",
        "Pass a user data script or cloud-init configuration when you create the instance; it "
        "runs on the first boot. Its output is written to /var/log/cloud-init-output.log.",
        "comp-013",
    ),
    LogEntry(
        "log-0026",
        "2026-11-09T07:15:33Z",
        "u08",
        "my server rebooted by itself last night",
        "Most instances are live-migrated during host maintenance without a reboot. GPU instances "
        "and instances with local NVMe disks are rebooted instead, after a notice at least 7 days "
        "in advance.",
        "comp-014",
    ),
    LogEntry(
        "log-0027",
        "2026-11-09T10:02:49Z",
        "u08",
        "open port 443",
        "Add an inbound rule allowing TCP 443 to a Cloud Firewall and apply the firewall to the "
        "instance by tag or name. Changes take effect within a few seconds.",
        "net-003",
    ),
    LogEntry(
        "log-0028",
        "2026-11-09T11:46:07Z",
        "u16",
        "static ip for my server",
        "Reserve an IP address and attach it to the instance. A reserved IP is free while "
        "attached to a running instance and costs $0.005 per hour otherwise.",
        "net-004",
    ),
    LogEntry(
        "log-0029",
        "2026-11-09T11:58:34Z",
        "u16",
        "https with lets encrypt on the load balancer",
        "Choose a managed certificate on the application load balancer. Let's Encrypt issues it "
        "for free and it renews automatically; your domain's DNS must point to the load balancer.",
        "net-006",
    ),
    LogEntry(
        "log-0030",
        "2026-11-10T08:29:16Z",
        "u25",
        "connect our office network to the vpc",
        "Create a site-to-site VPN gateway: it uses IPsec with IKEv2, provides two redundant "
        "tunnels of up to 1.25 Gbps each and costs $0.05 per hour.",
        "net-008",
    ),
    LogEntry(
        "log-0031",
        "2026-11-10T08:41:52Z",
        "u25",
        "private servers need internet for apt update",
        "Add a NAT gateway in a public subnet and a default route to it from the private subnets. "
        "It costs $0.045 per hour plus $0.01 per GB processed.",
        "net-011",
    ),
    LogEntry(
        "log-0032",
        "2026-11-10T14:05:27Z",
        "u10",
        "add mx record",
        "Nimbus DNS supports MX records. Add them in the hosted zone for your domain; the minimum "
        "TTL is 30 seconds.",
        "net-009",
    ),
    LogEntry(
        "log-0033",
        "2026-11-10T14:13:40Z",
        "u10",
        "connect vpcs in two different projects",
        "Use VPC peering. The VPCs can be in different projects or regions as long as their IP "
        "ranges do not overlap; peering is not transitive.",
        "net-007",
    ),
    LogEntry(
        "log-0034",
        "2026-11-11T09:50:12Z",
        "u20",
        "give a contractor read only access",
        "Invite the contractor under Organization > Members > Invite and choose the Viewer role, "
        "which has read-only access. Grant it on a single project to limit what they can see.",
        "sec-002",
    ),
    LogEntry(
        "log-0035",
        "2026-11-11T09:58:45Z",
        "u20",
        "invite link expired",
        "Invitation links are valid for 7 days. Ask an owner or admin to send a new invitation.",
        "sec-003",
    ),
    LogEntry(
        "log-0036",
        "2026-11-11T18:22:03Z",
        "u06",
        "lost my phone with the authenticator app",
        "Sign in with one of the 10 one-time recovery codes you saved when you set up 2FA, then "
        "enroll a new device under Account > Security.",
        "sec-004",
    ),
    LogEntry(
        "log-0037",
        "2026-11-12T10:14:58Z",
        "u06",
        "how to set up okta saml",
        "Configure SSO under Organization > Security with SAML 2.0; Okta is a tested identity "
        "provider. SSO requires the Team or Enterprise plan.",
        "sec-005",
    ),
    LogEntry(
        "log-0038",
        "2026-11-12T16:37:21Z",
        "u22",
        "accidentally pushed a token to github",
        "Revoke the token immediately under Account > API tokens, review the audit logs for "
        "actions taken with it and look for unexpected resources. Open a Security ticket if you "
        "need help.",
        "sec-015",
    ),
    LogEntry(
        "log-0039",
        "2026-11-13T08:44:30Z",
        "u13",
        "support phone number",
        "Phone support is part of the Business support plan ($299 per month or 10% of usage) and "
        "of Enterprise support; the other plans use tickets.",
        "acct-002",
    ),
    LogEntry(
        "log-0040",
        "2026-11-13T08:47:55Z",
        "u13",
        "is fra1 down",
        "Check status.nimbuscloud.com for the current status of fra1 and every service. You can "
        "subscribe to updates by email, SMS, RSS or webhook.",
        "acct-009",
    ),
]

LOGS_V2_NEW: list[LogEntry] = [
    LogEntry(
        "log-0041",
        "2026-11-17T09:12:40Z",
        "u31",
        "run python code when an image is uploaded to a bucket",
        "Create a Nimbus Function with a storage trigger on the bucket, filtered by a suffix such "
        "as .jpg. Events are delivered at least once and retried up to 3 times.",
        "fn-004",
    ),
    LogEntry(
        "log-0042",
        "2026-11-17T09:20:03Z",
        "u31",
        "function times out after a minute",
        "The default timeout is 60 seconds. You can raise it to at most 15 minutes.",
        "fn-003",
    ),
    LogEntry(
        "log-0043",
        "2026-11-18T11:05:26Z",
        "u32",
        "how many free function requests per month",
        "Each organization gets 1 million requests and 400,000 GB-seconds of Nimbus Functions "
        "free every month.",
        "bill-016",
    ),
    LogEntry(
        "log-0044",
        "2026-11-18T15:33:49Z",
        "u33",
        "first request to my function is slow",
        "That is a cold start, which typically adds 200 to 800 ms. Provisioned concurrency keeps "
        "instances initialized to avoid it.",
        "fn-006",
    ),
    LogEntry(
        "log-0045",
        "2026-11-18T15:41:12Z",
        "u33",
        "where do print statements go",
        "Anything a function writes to stdout or stderr appears in Logs, kept for 30 days and "
        "searchable by request ID.",
        "fn-007",
    ),
    LogEntry(
        "log-0046",
        "2026-11-19T10:08:55Z",
        "u34",
        "deploy function from the command line",
        "Run nimbus functions deploy <name> --runtime python3.12 --entry main.handler --source "
        "./src. Each deployment creates a new immutable version.",
        "fn-002",
    ),
    LogEntry(
        "log-0047",
        "2026-11-20T13:27:31Z",
        "u35",
        "function permission denied reading secret",
        "Functions run as a service account with no permissions by default. Grant its service "
        "account the secrets.accessor role.",
        "fn-005",
    ),
    LogEntry(
        "log-0048",
        "2026-11-23T08:02:17Z",
        "u36",
        "nightly job without keeping a server running",
        "Use a cron job on a small g2-micro instance, which is included in the free tier.",
        "fn-004",
    ),
    LogEntry(
        "log-0049",
        "2026-11-24T12:19:44Z",
        "u02",
        "invoice shows the wrong country for tax",
        "Update your billing country and tax ID under Billing > Tax settings. Changes apply from "
        "the next invoice; past invoices are not changed.",
        "bill-011",
    ),
    LogEntry(
        "log-0050",
        "2026-11-25T17:45:08Z",
        "u37",
        "cannot delete bucket, says not empty",
        "A bucket must be empty, including all object versions and delete markers, before it can "
        "be deleted. Use the Empty bucket action in the console first.",
        "stor-013",
    ),
    LogEntry(
        "log-0051",
        "2026-11-26T07:58:36Z",
        "u38",
        "2fa by sms",
        "SMS codes are not supported. Use an authenticator app (TOTP) or a WebAuthn security key "
        "such as a YubiKey.",
        "sec-004",
    ),
    LogEntry(
        "log-0052",
        "2026-11-27T14:30:22Z",
        "u39",
        "how many servers on the free plan",
        "The Starter plan allows up to 10 running instances, within the default quota of 24 vCPUs "
        "per region.",
        "bill-002",
    ),
]


# --------------------------------------------------------------------------------------------
# Human-labelled answers: two raters score 1-5; ground_truth_show is the correct decision of
# the production show/hide judge.
# --------------------------------------------------------------------------------------------

JUDGE_LABELS_V1: list[JudgeLabel] = [
    # Faithful, helpful answers.
    JudgeLabel(
        "jl-001",
        "When is my monthly invoice generated?",
        ("bill-001",),
        "Your invoice is generated on the 1st of each month and covers all usage of the previous "
        "calendar month. It is emailed to your billing contact and can be downloaded under "
        "Billing > Invoices.",
        True,
        5,
        5,
    ),
    JudgeLabel(
        "jl-002",
        "Can I pay with PayPal?",
        ("bill-004",),
        "No, PayPal isn't accepted. You can pay by Visa, Mastercard or American Express card, by "
        "SEPA direct debit if your billing address is in the EU, or by bank transfer on the "
        "Enterprise plan.",
        True,
        5,
        5,
    ),
    JudgeLabel(
        "jl-003",
        "Do budgets stop my instances when I exceed them?",
        ("bill-009", "bill-010"),
        "No. Budgets only send alerts by email and webhook, at 50%, 90% and 100% of the amount. "
        "If you need a hard cap, set a project spending limit: when it is reached, new resources "
        "are blocked and running instances are stopped.",
        True,
        5,
        4,
    ),
    JudgeLabel(
        "jl-004",
        "What is the largest object I can store?",
        ("stor-001",),
        "A single object can be up to 5 TB. Uploads larger than 5 GB must use multipart upload.",
        True,
        5,
        5,
    ),
    JudgeLabel(
        "jl-005",
        "Can I shrink a block volume?",
        ("stor-007",),
        "No, block volumes can only grow. To move to a smaller disk, create a new, smaller volume "
        "and copy your data over.",
        True,
        5,
        4,
    ),
    JudgeLabel(
        "jl-006",
        "How long are automated backups kept?",
        ("stor-009",),
        "Backups are kept for 7 days by default. You can change the retention to any value "
        "between 1 and 35 days.",
        True,
        5,
        5,
    ),
    JudgeLabel(
        "jl-007",
        "How much warning do I get before a spot instance is reclaimed?",
        ("comp-010", "comp-012"),
        "You get a 30-second warning, published on the metadata endpoint "
        "/v1/spot/termination-time, so your workload should be able to stop quickly.",
        True,
        4,
        5,
    ),
    JudgeLabel(
        "jl-008",
        "Which user do I use for SSH on a Debian instance?",
        ("comp-006",),
        "Use the user debian, for example ssh debian@<public-ip>, with the SSH key you added "
        "before creating the instance.",
        True,
        5,
        5,
    ),
    JudgeLabel(
        "jl-009",
        "How many usable addresses are there in a /24 subnet?",
        ("net-002",),
        "251. Nimbus Cloud reserves the first four addresses and the last address of every subnet.",
        True,
        5,
        5,
    ),
    JudgeLabel(
        "jl-010",
        "How do I get a free certificate for my load balancer?",
        ("net-006",),
        "Choose a managed certificate. It is issued by Let's Encrypt at no cost and renewed "
        "automatically 30 days before it expires, as long as your domain's DNS points to the load "
        "balancer.",
        True,
        5,
        4,
    ),
    JudgeLabel(
        "jl-011",
        "Is SSO available on the Starter plan?",
        ("sec-005", "bill-002"),
        "No. Single sign-on is available on the Team and Enterprise plans. Team costs $49 per "
        "month and also adds Developer support.",
        True,
        5,
        5,
    ),
    JudgeLabel(
        "jl-012",
        "How long are audit logs kept?",
        ("sec-008",),
        "Audit logs are retained for 365 days. To keep them longer, export them continuously to "
        "an Object Storage bucket.",
        True,
        5,
        4,
    ),
    JudgeLabel(
        "jl-013",
        "How fast does Business support respond to urgent tickets?",
        ("acct-004",),
        "Urgent tickets on the Business support plan get a first response within 1 hour, around "
        "the clock.",
        True,
        5,
        5,
    ),
    JudgeLabel(
        "jl-014",
        "What happens to the public IP when I stop my instance?",
        ("comp-003", "net-004"),
        "The ephemeral public IP is released when the instance stops, and a new one is assigned "
        "when it starts. To keep the same address, attach a reserved IP; it costs $0.005 per hour "
        "while the instance is stopped.",
        True,
        5,
        5,
    ),
    JudgeLabel(
        "jl-015",
        "Where can I check for outages?",
        ("acct-009",),
        "Check status.nimbuscloud.com. You can also subscribe to updates by email, SMS, RSS or "
        "webhook, filtered by region and service.",
        True,
        5,
        4,
    ),
    JudgeLabel(
        "jl-016",
        "How do I log in with the CLI?",
        ("acct-012",),
        "Run nimbus auth login, which signs you in through your browser. In scripts, set the "
        "NIMBUS_TOKEN environment variable to an API token instead.",
        True,
        4,
        4,
    ),
    JudgeLabel(
        "jl-017",
        "How do I keep old object versions for only 30 days?",
        ("stor-004", "stor-003"),
        "Enable versioning on the bucket and add a lifecycle rule that deletes noncurrent "
        "versions after 30 days. Rules are evaluated daily and can take up to 48 hours to apply.",
        True,
        5,
        4,
    ),
    # Hallucinated or contradicting answers.
    JudgeLabel(
        "jl-018",
        "Can I pay with PayPal?",
        ("bill-004",),
        "Yes, PayPal is supported alongside credit cards. Add it under Billing > Payment methods.",
        False,
        1,
        1,
    ),
    JudgeLabel(
        "jl-019",
        "How long are automated backups kept?",
        ("stor-009",),
        "Automated backups are kept for 90 days and are included free of charge with every "
        "instance.",
        False,
        1,
        1,
    ),
    JudgeLabel(
        "jl-020",
        "Can I shrink a block volume?",
        ("stor-007",),
        "Yes. Stop the instance, then reduce the size under Volumes > Resize; the file system is "
        "shrunk automatically.",
        False,
        1,
        2,
    ),
    JudgeLabel(
        "jl-021",
        "What is the default GPU quota?",
        ("comp-008", "comp-011"),
        "The default GPU quota is 4 GPUs per region on the Team plan, so you can create gpu-a100 "
        "instances right away in any region.",
        False,
        1,
        1,
    ),
    JudgeLabel(
        "jl-022",
        "Can I receive two-factor authentication codes by SMS?",
        ("sec-004",),
        "Yes, you can receive 2FA codes by SMS or use an authenticator app. SMS is the "
        "recommended option for most users.",
        False,
        1,
        1,
    ),
    JudgeLabel(
        "jl-023",
        "How much does internet egress cost?",
        ("bill-013",),
        "Outbound traffic costs $0.09 per GB from the first gigabyte, and inbound traffic costs "
        "$0.01 per GB.",
        False,
        1,
        1,
    ),
    JudgeLabel(
        "jl-024",
        "Do budgets stop my instances when I exceed them?",
        ("bill-009",),
        "Yes. Once actual spend reaches 100% of the budget, all instances in the project are "
        "stopped automatically to prevent further charges.",
        False,
        2,
        1,
    ),
    JudgeLabel(
        "jl-025",
        "How long is an invitation link valid?",
        ("sec-003",),
        "Invitation links never expire, but an owner can revoke them at any time.",
        False,
        1,
        1,
    ),
    JudgeLabel(
        "jl-026",
        "What is the maximum lifetime of an API token?",
        ("sec-006",),
        "API tokens can be created without an expiration date. If you lose one, you can view it "
        "again under Account > API tokens.",
        False,
        1,
        1,
    ),
    JudgeLabel(
        "jl-027",
        "Can I get a refund for a GPU instance I forgot to stop?",
        ("bill-012",),
        "Nimbus Cloud does not refund usage under any circumstances; you can only dispute "
        "incorrect charges within 30 days.",
        False,
        1,
        3,
    ),
    JudgeLabel(
        "jl-028",
        "Which regions offer GPU instances?",
        ("comp-011",),
        "GPU instances are available in all six regions, including lon1 and sgp1.",
        False,
        1,
        1,
    ),
    JudgeLabel(
        "jl-029",
        "How long does it take to restore an object from Archive?",
        ("stor-015",),
        "Archived objects can be downloaded immediately; a restore is only needed for objects "
        "older than 180 days.",
        False,
        1,
        2,
    ),
    JudgeLabel(
        "jl-030",
        "Is VPC peering transitive?",
        ("net-007",),
        "Yes. If VPC A is peered with B and B with C, A can reach C through B without extra "
        "configuration.",
        False,
        1,
        1,
    ),
    # Partially correct answers.
    JudgeLabel(
        "jl-031",
        "Which payment methods are accepted?",
        ("bill-004",),
        "Visa, Mastercard and American Express cards are accepted.",
        True,
        3,
        4,
    ),
    JudgeLabel(
        "jl-032",
        "How many instances can I run on the Starter plan?",
        ("bill-002", "comp-008"),
        "The Starter plan allows up to 10 running instances.",
        True,
        4,
        3,
    ),
    JudgeLabel(
        "jl-033",
        "What does the free tier include?",
        ("bill-003",),
        "New accounts get $200 in credit, and the always-free tier includes a g2-micro instance "
        "and 5 GB of object storage.",
        True,
        3,
        3,
    ),
    JudgeLabel(
        "jl-034",
        "How do I share a private object with someone outside my team?",
        ("stor-005",),
        "Generate a presigned URL for the object. Presigned URLs can be valid for up to 30 days.",
        False,
        2,
        3,
    ),
    JudgeLabel(
        "jl-035",
        "What happens when a payment fails?",
        ("bill-005",),
        "Nimbus Cloud retries the charge and emails the billing contact. If the invoice stays "
        "unpaid, your resources are deleted after 30 days.",
        False,
        2,
        3,
    ),
    JudgeLabel(
        "jl-036",
        "How can I get into an instance whose SSH configuration is broken?",
        ("comp-007",),
        "Use the web console under Compute > Instances > [instance] > Console. It works in the "
        "browser even when the network or SSH is broken.",
        True,
        5,
        3,
    ),
    JudgeLabel(
        "jl-037",
        "How much does a load balancer cost?",
        ("net-005",),
        "A load balancer costs $0.025 per hour.",
        True,
        3,
        3,
    ),
    JudgeLabel(
        "jl-038",
        "What is the uptime SLA for instances?",
        ("comp-015",),
        "Instances have a 99.95% monthly uptime SLA, and you receive service credits if it is "
        "missed.",
        True,
        4,
        2,
    ),
    JudgeLabel(
        "jl-039",
        "How often are KMS keys rotated?",
        ("sec-009",),
        "KMS keys can be rotated automatically every 30 days.",
        False,
        2,
        2,
    ),
    JudgeLabel(
        "jl-040",
        "Where do I find the output of my user data script?",
        ("comp-013",),
        "Check the cloud-init logs on the instance, under /var/log.",
        True,
        3,
        4,
    ),
]

JUDGE_LABELS_V2_NEW: list[JudgeLabel] = [
    JudgeLabel(
        "jl-041",
        "What is the maximum timeout for a function?",
        ("fn-003",),
        "The maximum timeout is 15 minutes; by default a function times out after 60 seconds.",
        True,
        5,
        5,
    ),
    JudgeLabel(
        "jl-042",
        "How much does Nimbus Functions cost?",
        ("bill-016",),
        "$0.20 per million requests and $0.0000166 per GB-second. The first 1 million requests "
        "and 400,000 GB-seconds each month are free.",
        True,
        5,
        5,
    ),
    JudgeLabel(
        "jl-043",
        "Which runtimes does Nimbus Functions support?",
        ("fn-001",),
        "Python 3.12, Node.js 20, Go 1.22 and Java 21.",
        False,
        2,
        2,
    ),
    JudgeLabel(
        "jl-044",
        "How do I avoid cold starts?",
        ("fn-006",),
        "Enable provisioned concurrency to keep function instances warm. It is free of charge.",
        False,
        2,
        1,
    ),
    JudgeLabel(
        "jl-045",
        "Can a function read objects from a bucket by default?",
        ("fn-005",),
        "No. A function runs as a service account that has no permissions by default; grant it "
        "the storage.objectViewer role to read objects.",
        True,
        5,
        4,
    ),
    JudgeLabel(
        "jl-046",
        "How long are function logs kept?",
        ("fn-007",),
        "Function logs are kept for 365 days, like audit logs.",
        False,
        1,
        1,
    ),
    JudgeLabel(
        "jl-047",
        "How large can a function deployment package be?",
        ("fn-002",),
        "Deployment packages can be up to 50 MB zipped.",
        True,
        4,
        3,
    ),
    JudgeLabel(
        "jl-048",
        "Can storage events be delivered to my function twice?",
        ("fn-004",),
        "Yes. Storage events are delivered at least once and retried up to 3 times on failure, so "
        "make your function idempotent.",
        True,
        5,
        5,
    ),
]

JUDGE_CHANGES_V2: list[JudgeChange] = [
    JudgeChange(
        "jl-038",
        False,
        "on re-review the answer was judged misleading: 99.95% applies only to multi-zone "
        "deployments, a single instance gets 99.5%",
    ),
]


# --------------------------------------------------------------------------------------------
# BM25 (Okapi, Lucene-style idf) over title + text, used for the production run and the logs.
# --------------------------------------------------------------------------------------------


def tokenize(text: str) -> list[str]:
    """Lowercase word tokens."""
    return re.findall(r"\w+", text.lower())


class BM25:
    """A minimal Okapi BM25 index."""

    def __init__(self, docs: list[Doc], k1: float = BM25_K1, b: float = BM25_B) -> None:
        self.doc_ids = [d.doc_id for d in docs]
        self.tfs = [Counter(tokenize(f"{d.title} {d.text}")) for d in docs]
        self.lengths = [sum(tf.values()) for tf in self.tfs]
        self.avgdl = sum(self.lengths) / len(self.lengths)
        df = Counter(term for tf in self.tfs for term in tf)
        n = len(docs)
        self.idf = {t: math.log(1 + (n - f + 0.5) / (f + 0.5)) for t, f in df.items()}
        self.k1, self.b = k1, b

    def score(self, query_terms: list[str], i: int) -> float:
        """BM25 score of document `i` for the (possibly repeated) query terms."""
        tf, norm = self.tfs[i], self.k1 * (1 - self.b + self.b * self.lengths[i] / self.avgdl)
        return sum(
            self.idf[t] * tf[t] * (self.k1 + 1) / (tf[t] + norm) for t in query_terms if t in tf
        )

    def search(self, query: str, k: int) -> list[tuple[str, float]]:
        """The top `k` documents with a positive score, best first (ties by doc id)."""
        terms = tokenize(query)
        scored = [(self.score(terms, i), doc_id) for i, doc_id in enumerate(self.doc_ids)]
        ranked = sorted((s for s in scored if s[0] > 0), key=lambda s: (-s[0], s[1]))
        return [(doc_id, score) for score, doc_id in ranked[:k]]


# --------------------------------------------------------------------------------------------
# Assembly
# --------------------------------------------------------------------------------------------


def latency_ms(log_id: str, n_retrieved: int) -> float:
    """A plausible end-to-end latency, reproducible from the log id."""
    rng = random.Random(log_id)
    return round(180.0 + 25.0 * n_retrieved + rng.lognormvariate(6.2, 0.35), 1)


def retrieval_latency_ms(log_id: str, n_retrieved: int) -> float:
    """The retrieval part of the latency (the rest is generation), reproducible."""
    rng = random.Random(f"{log_id}-retrieval")
    return round(120.0 + 25.0 * n_retrieved + rng.uniform(0.0, 60.0), 1)


def feedback(log_id: str) -> str | None:
    """Thumbs up/down or a 1-5 rating for about 85% of the interactions, reproducible."""
    draw = random.Random(f"{log_id}-feedback").random()
    if draw < 0.55:
        return "up"
    if draw < 0.68:
        return "down"
    if draw < 0.85:
        return str(1 + int((draw - 0.68) / 0.17 * 5))
    return None


def token_count(*texts: str) -> int:
    """A rough token count (1.3 per word), the order of magnitude a tokenizer gives."""
    return round(1.3 * sum(len(text.split()) for text in texts))


def log_rows(entries: list[LogEntry], index: BM25, docs: list[Doc]) -> list[dict[str, Any]]:
    """Log records for each entry: the BM25 top-5 retrieval, the top-3 texts given to the
    generator as contexts, latencies (total, retrieval, generation), tokens of the generator
    (`LOG_MODEL`, priced by litellm), user feedback, and an `error` for about 1 in 20 (a
    reranker timeout: the answer came from the first-stage retrieval)."""
    texts = {d.doc_id: d.text for d in docs}
    rows = []
    for e in entries:
        retrieved = [doc_id for doc_id, _ in index.search(e.question, LOG_DEPTH)]
        contexts = [texts[d] for d in retrieved[:LOG_CONTEXTS]]
        total = latency_ms(e.log_id, len(retrieved))
        retrieval = min(retrieval_latency_ms(e.log_id, len(retrieved)), total)
        failed = random.Random(f"{e.log_id}-error").random() < 0.05
        rows.append(
            {
                "log_id": e.log_id,
                "timestamp": e.timestamp,
                "session_id": e.session_id,
                "question": e.question,
                "answer": e.answer,
                "retrieved_doc_ids": retrieved,
                "contexts": contexts,
                "shown_doc_id": e.shown_doc_id,
                "latency_ms": total,
                "retrieval_latency_ms": retrieval,
                "generation_latency_ms": round(total - retrieval, 1),
                "error": "reranker timed out; answered from first-stage retrieval"
                if failed
                else None,
                "model": LOG_MODEL,
                "prompt_tokens": token_count(e.question, *contexts),
                "completion_tokens": token_count(e.answer),
                "feedback": feedback(e.log_id),
            }
        )
    return rows


def apply_v2_changes(queries: list[Query]) -> list[Query]:
    """demo-v1 questions with the demo-v2 label and answer corrections applied."""
    by_id = {q.query_id: q for q in queries}
    for change in QREL_CHANGES_V2:
        q = by_id[change.query_id]
        by_id[q.query_id] = replace(q, qrels={**q.qrels, change.doc_id: change.relevance})
    for fix in ANSWER_CHANGES_V2:
        by_id[fix.query_id] = replace(by_id[fix.query_id], answer=fix.answer)
    return [by_id[q.query_id] for q in queries]


def apply_judge_changes(labels: list[JudgeLabel]) -> list[JudgeLabel]:
    """demo-v1 judge labels with the demo-v2 show/hide corrections applied."""
    fixes = {c.label_id: c for c in JUDGE_CHANGES_V2}
    return [replace(j, show=fixes[j.label_id].show) if j.label_id in fixes else j for j in labels]


def change_list() -> list[str]:
    """The "Changes from demo-v1" bullet points, derived from the change records."""
    v1 = {q.query_id: q for q in QUERIES_V1}
    new_queries = QUERIES_V2_NEW
    sessions = sorted({q.session_id for q in new_queries if q.session_id})
    new_doc_ids = ", ".join(d.doc_id for d in CORPUS_V2_NEW)
    lines = [
        f"Added {len(CORPUS_V2_NEW)} documents for the launch of Nimbus Functions: {new_doc_ids} "
        "(new cluster `serverless`; the pricing page is in `billing`).",
        f"Added {len(new_queries)} questions ({new_queries[0].query_id} to "
        f"{new_queries[-1].query_id}), mostly about Functions, including session "
        f"{', '.join(sessions)} and a near-duplicate pair (q067/q059).",
        f"Added {len(LOGS_V2_NEW)} logged interactions ({LOGS_V2_NEW[0].log_id} to "
        f"{LOGS_V2_NEW[-1].log_id}, 2026-11-17 to 2026-11-27), retrieved over the demo-v2 corpus; "
        "the demo-v1 logs are unchanged.",
        f"Added {len(JUDGE_LABELS_V2_NEW)} judge labels ({JUDGE_LABELS_V2_NEW[0].label_id} to "
        f"{JUDGE_LABELS_V2_NEW[-1].label_id}).",
        "The production BM25 run was re-logged for all questions over the demo-v2 corpus.",
        "Corrected relevance labels:",
    ]
    for c in QREL_CHANGES_V2:
        old = v1[c.query_id].qrels.get(c.doc_id)
        before = "not judged" if old is None else str(old)
        lines.append(f"  - {c.query_id} / {c.doc_id}: {before} → {c.relevance} ({c.reason}).")
    lines.append("Corrected ground-truth answers:")
    lines.extend(f"  - {c.query_id}: {c.reason}." for c in ANSWER_CHANGES_V2)
    lines.append("Corrected judge labels:")
    v1_labels = {j.label_id: j for j in JUDGE_LABELS_V1}
    for c in JUDGE_CHANGES_V2:
        old = "yes" if v1_labels[c.label_id].show else "no"
        new = "yes" if c.show else "no"
        lines.append(f"  - {c.label_id}: ground_truth_show {old} → {new} ({c.reason}).")
    return lines


def build_versions() -> list[Version]:
    """Assemble demo-v1 and demo-v2 from the hand-written data."""
    v1_index = BM25(CORPUS_V1)
    corpus_v2 = CORPUS_V1 + CORPUS_V2_NEW
    v2_index = BM25(corpus_v2)
    v1_logs = log_rows(LOGS_V1, v1_index, CORPUS_V1)
    v1 = Version(
        name="demo-v1",
        docs=CORPUS_V1,
        queries=QUERIES_V1,
        logs=v1_logs,
        judge_labels=JUDGE_LABELS_V1,
        description=(
            "The first release of the Nimbus Cloud help-center dataset: documentation articles in "
            "six "
            "topics, questions with graded judgments, a logged production run, user logs and "
            "judge labels."
        ),
    )
    v2 = Version(
        name="demo-v2",
        docs=corpus_v2,
        queries=apply_v2_changes(QUERIES_V1) + QUERIES_V2_NEW,
        logs=v1_logs + log_rows(LOGS_V2_NEW, v2_index, corpus_v2),
        judge_labels=apply_judge_changes(JUDGE_LABELS_V1) + JUDGE_LABELS_V2_NEW,
        description=(
            "The second release of the Nimbus Cloud help-center dataset: demo-v1 plus the "
            "documentation of the newly launched Nimbus Functions, more questions, logs and "
            "judge labels, and a few corrected labels."
        ),
        changes=change_list(),
    )
    return [v1, v2]


def validate(version: Version) -> None:
    """Fail loudly if the hand-written data is inconsistent."""
    doc_ids = [d.doc_id for d in version.docs]
    known = set(doc_ids)
    problems: list[str] = []
    if len(known) != len(doc_ids):
        problems.append("duplicate doc ids")
    query_ids = [q.query_id for q in version.queries]
    if len(set(query_ids)) != len(query_ids):
        problems.append("duplicate query ids")
    for q in version.queries:
        unknown = set(q.qrels) - known
        if unknown:
            problems.append(f"{q.query_id}: unknown docs {sorted(unknown)}")
        if max(q.qrels.values()) < 2:
            problems.append(f"{q.query_id}: no document with relevance >= 2")
        if any(r not in (0, 1, 2, 3) for r in q.qrels.values()):
            problems.append(f"{q.query_id}: relevance outside 0..3")
    by_id = {q.query_id: q for q in version.queries}
    for dup, original in NEAR_DUPLICATES:
        if dup in by_id and by_id[dup].qrels != by_id[original].qrels:
            problems.append(f"near-duplicate {dup} judged differently from {original}")
    for row in version.logs:
        ids = [row["shown_doc_id"], *row["retrieved_doc_ids"]]
        if not set(ids) <= known:
            problems.append(f"{row['log_id']}: unknown doc ids")
    for j in version.judge_labels:
        if not set(j.context_doc_ids) <= known:
            problems.append(f"{j.label_id}: unknown context docs")
    if problems:
        raise ValueError(f"{version.name}: " + "; ".join(problems))


# --------------------------------------------------------------------------------------------
# Writing
# --------------------------------------------------------------------------------------------


def write_text(path: Path, text: str) -> None:
    """Write UTF-8 text with `\\n` line endings, creating parent folders."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", encoding="utf-8", newline="\n") as handle:
        handle.write(text)


def write_jsonl(path: Path, rows: Iterable[dict[str, Any]]) -> None:
    """One JSON object per line, keys sorted, non-ASCII kept as is."""
    write_text(
        path, "".join(json.dumps(r, ensure_ascii=False, sort_keys=True) + "\n" for r in rows)
    )


def qrel_lines(queries: list[Query]) -> list[str]:
    """qrels.csv lines: per question, highest grade first."""
    lines = ["query_id,doc_id,relevance"]
    for q in queries:
        for doc_id, relevance in sorted(q.qrels.items(), key=lambda kv: (-kv[1], kv[0])):
            lines.append(f"{q.query_id},{doc_id},{relevance}")
    return lines


def run_lines(queries: list[Query], index: BM25) -> list[str]:
    """TREC run lines `qid Q0 docid rank score tag`, top 10 per question."""
    lines = []
    for q in queries:
        for rank, (doc_id, score) in enumerate(index.search(q.question, RUN_DEPTH), start=1):
            lines.append(f"{q.query_id} Q0 {doc_id} {rank} {score:.4f} {RUN_TAG}")
    return lines


def dataset_md(version: Version, n_qrels: Counter[int]) -> str:
    """The human description of a version, with counts computed from the data."""
    clusters = Counter(d.cluster for d in version.docs)
    sessions = sorted({q.session_id for q in version.queries if q.session_id})
    n_session_turns = sum(1 for q in version.queries if q.session_id)
    n_standalone = len(version.queries) - n_session_turns
    hard = [q for q in HARD_QUERY_IDS if any(x.query_id == q for x in version.queries)]
    ids = {q.query_id for q in version.queries}
    dups = [f"{a}/{b}" for a, b in NEAR_DUPLICATES if a in ids]
    shows = Counter("yes" if j.show else "no" for j in version.judge_labels)
    in_top5 = sum(1 for r in version.logs if r["shown_doc_id"] in r["retrieved_doc_ids"])
    cluster_text = ", ".join(f"{name} {n}" for name, n in clusters.items())
    grade_text = ", ".join(f"{n_qrels[g]} × grade {g}" for g in (3, 2, 1, 0))
    first, last = version.logs[0]["timestamp"], version.logs[-1]["timestamp"]
    parts = [
        f"# {version.name}",
        "",
        version.description,
        "",
        "Nimbus Cloud is a fictional cloud provider; its products, prices and limits are invented "
        "but consistent across all files, so every answer can be checked against the corpus.",
        "Regenerate these files with `python scripts/build_demo_datasets.py`; do not edit "
        "them by hand.",
        "",
        "## Files",
        "",
        "| File | Rows | Contents |",
        "| --- | ---: | --- |",
        f"| `corpus.jsonl` | {len(version.docs)} | Help-center articles with `title`, `text` and a "
        f"topic `cluster` ({cluster_text}). |",
        f"| `queries.jsonl` | {len(version.queries)} | {n_standalone} standalone questions and "
        f"{len(sessions)} three-turn sessions ({n_session_turns} turns, `session_id` "
        f"{sessions[0]} to {sessions[-1]}), each with a 1-2 sentence `ground_truth_answer`. |",
        f"| `qrels.csv` | {sum(n_qrels.values())} | Graded judgments: {grade_text}. |",
        f"| `runs/production-bm25.trec` | {len(version.queries) * RUN_DEPTH} | Top {RUN_DEPTH} "
        "per question of the production retriever (Okapi BM25, k1=1.2, b=0.75, over title and "
        "text), in TREC run format. |",
        f"| `logs.jsonl` | {len(version.logs)} | Logged real-user interactions ({first[:10]} to "
        f"{last[:10]}) with the BM25 top {LOG_DEPTH} and the document the user opened "
        f"(`shown_doc_id`; in the retrieved list for {in_top5} of {len(version.logs)}). |",
        f"| `judge_labels.jsonl` | {len(version.judge_labels)} | Answers scored 1-5 by two "
        f"human raters, with the correct show/hide decision ({shows['yes']} show, "
        f"{shows['no']} hide). |",
        "",
        "## Notes",
        "",
        "- Relevance grades: 3 = answers the question directly, 2 = answers most of it, "
        "1 = related or partial, 0 = judged not relevant (documents a retriever is likely to "
        "confuse with the right one).",
        '- Follow-up turns of a session (e.g. "How long are they kept?") only make sense with '
        "the earlier turns; their judgments refer to the documents of the whole conversation.",
        f"- Questions that need two documents: {', '.join(hard)}.",
        f"- Near-duplicate phrasings of another question, with identical judgments and answers "
        f"(for the semantic-cache hit rate): {', '.join(dups)}.",
        "- Judge labels are a mix of faithful answers (scores 4-5), hallucinated or "
        "contradicting ones (1-2) and partially correct ones (around 3); the raters disagree "
        "by one point often and by two points occasionally.",
    ]
    if version.changes:
        parts += ["", "## Changes from demo-v1", ""]
        parts += [c if c.startswith("  - ") else f"- {c}" for c in version.changes]
    return "\n".join(parts) + "\n"


HUMAN_CRITERIA = ("faithfulness", "relevance", "correctness", "overall")


def criteria_scores(label: JudgeLabel) -> dict[str, int]:
    """`human_<criterion>_<rater>` (1-5): each rater's overall score is their single score;
    the other criteria move from it by at most one point, reproducibly per label."""
    scores = {}
    for rater, overall in (("rater_a", label.rater_a), ("rater_b", label.rater_b)):
        for criterion in HUMAN_CRITERIA:
            rng = random.Random(f"{label.label_id}-{rater}-{criterion}")
            shift = 0 if criterion == "overall" else rng.choice((-1, 0, 0, 0, 1))
            scores[f"human_{criterion}_{rater}"] = min(5, max(1, overall + shift))
    return scores


def write_version(version: Version, out_dir: Path) -> None:
    """Validate a version and write all of its files under `out_dir/<name>/`."""
    validate(version)
    folder = out_dir / version.name
    index = BM25(version.docs)
    write_jsonl(
        folder / "corpus.jsonl",
        (
            {"doc_id": d.doc_id, "title": d.title, "text": d.text, "cluster": d.cluster}
            for d in version.docs
        ),
    )
    write_jsonl(
        folder / "queries.jsonl",
        (
            {
                "query_id": q.query_id,
                "question": q.question,
                "ground_truth_answer": q.answer,
                "session_id": q.session_id,
                "turn": q.turn,
                "expected_pattern": EXPECTED_PATTERNS.get(q.query_id),
            }
            for q in version.queries
        ),
    )
    write_text(folder / "qrels.csv", "\n".join(qrel_lines(version.queries)) + "\n")
    write_text(
        folder / "runs" / f"{RUN_TAG}.trec", "\n".join(run_lines(version.queries, index)) + "\n"
    )
    write_jsonl(folder / "logs.jsonl", version.logs)
    docs = {d.doc_id: d for d in version.docs}
    write_jsonl(
        folder / "judge_labels.jsonl",
        (
            {
                "label_id": j.label_id,
                "question": j.question,
                "context": "\n\n".join(docs[d].text for d in j.context_doc_ids),
                "answer": j.answer,
                "ground_truth_show": "yes" if j.show else "no",
                "human_score_rater_a": j.rater_a,
                "human_score_rater_b": j.rater_b,
                **criteria_scores(j),
            }
            for j in version.judge_labels
        ),
    )
    grades = Counter(r for q in version.queries for r in q.qrels.values())
    write_text(folder / "DATASET.md", dataset_md(version, grades))


def main(argv: list[str] | None = None) -> None:
    """Command-line entry point."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--out",
        type=Path,
        default=DEFAULT_OUT,
        help="folder that receives demo-v1/ and demo-v2/ (default: data/datasets)",
    )
    args = parser.parse_args(argv)
    for version in build_versions():
        write_version(version, args.out)
        print(f"wrote {args.out / version.name}")


if __name__ == "__main__":
    main()
