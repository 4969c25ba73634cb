"""The verdict engine: each scorecard metric against its baseline, tested and FDR-controlled.

`compare.compare_partitions` gives one row per (tier, system, metric) with a verdict:

- **paired test** on the items both dates scored (`PartitionScores.items`): 0/1 metrics use the
  exact one-sided sign test on the discordant pairs (McNemar), other metrics the one-sided
  paired sign-flip test, exact (every sign pattern enumerated) up to 40 non-zero differences and
  seeded Monte Carlo beyond; items scored on one date only are counted (`n_only_baseline`,
  `n_only_current`), not silently dropped;
- **unpaired test** on samples of each date (`PartitionScores.samples`: the system under
  test's per-question latencies, and the traffic tier's interactions, which differ from day to
  day): latency percentiles use the one-sided quantile exceedance test, 0/1 metrics the
  one-sided Fisher's exact test, other metrics the one-sided two-sample permutation test of
  the difference in means. `n_paired` is 0 and the sample sizes are `n_only_baseline` and
  `n_only_current`; error rows (NaN) are left out of both samples;
- **metric roles** (`role`, from `config/thresholds.yaml`): `primary` metrics share
  `RegressionRule.primary_share` (0.8) of the family's weight, `secondary` ones the rest;
  **weighted Benjamini–Hochberg** (Genovese, Roeder & Wasserman, 2006) over the partition's
  primary and secondary tests, one family per direction, weights averaging 1, so a lone
  primary is rejected at p < α·0.8 / m_primary however many secondaries there are (`bar`
  holds each row's lone-rejection bar α·w/m). `monitor` metrics (agreement between judge and
  raters, descriptive figures) are tested in a family of their own and never alerted;
- **Monte Carlo resolution**: a sign-flip or permutation test drawn at random has p ≥
  1 / (n_resamples + 1); when a row's bar is finer than 10 / (n_resamples + 1), its floor is
  that of ⌈10 / bar⌉ resamples and, if its first p-value is at most 10 / (n_resamples + 1),
  the test is re-run with them (`family.resolve_monte_carlo`), so a row is never untestable for want
  of resamples;
- a **degenerate** test (no discordant pair, no non-zero difference, all values equal) has
  p ≡ 1 and leaves the family: it cannot be rejected and would only raise every other bar;
- `regressed` needs q < α (0.05 by default) **and** a change in the bad direction beyond the
  metric's tolerance (`regression_threshold × |baseline|`, at least `regression_min_change`);
  `improved` mirrors it. Metrics without per-item values are judged by the effect rule alone;
- **`untestable`**: a test that did not decide and whose smallest reachable p-value on its
  items (2⁻ᵏ for k discordant pairs or non-zero differences; the most lopsided table for
  Fisher's) is above its bar: it could not have flagged anything alone, so it never reads as
  "no significant change"; the reason says about how many items would detect today's change.
  A primary metric that is untestable, moved the bad way by more than
  `RegressionRule.untested_tolerance` (20%) and whose own one-sided test alone has p < α is
  alerted, labeled "effect only: too few items to test" (a collapse on 6 questions, p = 1/64,
  is; one question out of 6 moving, p = 1/2, is not);
- **coverage**: a metric whose scored items fell by more than `RegressionRule.coverage_tolerance`
  (10%) of the baseline's (declined answers, failed generations, judge errors) reads
  `coverage dropped: 10 of 20 items scored (was 20)`: `not comparable` (its mean is over other
  items), or `regressed` with the words added when it regressed on the items left; alerted
  for a primary metric (so a system cannot improve by answering fewer questions);
- **no traffic**: a traffic tier with interactions on the baseline date and none today is one
  alert on its `volume` row, `no traffic: no interaction today (N on the baseline date)`; its
  other metrics, and the rows computed from the logged interactions (system `real-users`:
  Tier 1 on real-user queries, UX) left without a value, read `no traffic today`, not
  alerted. `dataset.yaml`'s `traffic_every_day:
  false` (traffic that may pause, e.g. on weekends) makes it a note, not an alert;
- a **zero baseline** has no relative change (`relative_change` NaN, never infinite): the
  surfaces print the change in points (`reporting.alerting.change_text`);
- `not comparable` with the `reason`: no baseline yet; no value on either date (never
  alerted); `missing today` (a value on the baseline, none today: an alert); `judge outage`
  (more than half of the metric's judgments failed today: an alert); or `judge changed` /
  `generator changed` / `embedder changed` for the metrics the model feeds (shown, never
  alerted; `model_feeds`: the generator feeds Tier 3 only for the reference RAG, the embedder
  Tier 1 only for the reference RAG and the dense and hybrid reference retrievers) unless the
  baseline was rebuilt with today's model (`evaluation.model_bridge`, `PartitionScores.bridged`).
  A model change is named before `missing today` and `no baseline value`: Tiers 0 and 2 name
  their system after the model.

`n_items` is the number of items behind today's value (paired items, else the scorecard's
count: judgments, interactions); `noise`, the day's noise in its paired differences, robust to a
one-way change (`metrics.sensitivity.directional_noise`: the discordance rate of a 0/1 metric,
the mean square difference of a continuous one); `items_needed`, for primary metrics with paired
items, about how many items a 10% drop needs to be flagged alone at the row's bar, at the noise
pooled over today and the stored days given as `history` (`metrics.sensitivity.pooled_noise`),
at least `DISCORDANCE_FLOOR` (0/1) or a spread of `SPREAD_FLOOR` × |baseline| (continuous), so
a quiet day and a regression day give about the same figure; `items_needed_basis` states that
assumption; `items_to_detect`, for untestable rows, about how many paired
items would detect today's change alone. Dataset statistics (tier `dataset`) and descriptive
counts are not compared.

`effect_rule.detect_regressions` is the previous unpaired rule (relative drop beyond the
tolerance and the baseline outside today's bootstrap CI), kept so
`benchmarks/regression_power.py` can measure the rules side by side.

How it is built, one job per module: `pairing` lines the two dates up; `evidence` gathers one
`Evidence` per metric row (values, items, why it is not comparable, its test from
`significance`); `family` adds the bars and weighted-BH q-values; `planner` the planner's
figures; `decide.decide(evidence, rule)` returns the row's verdict, worded by `wording` (the
only place a reason is phrased); `compare` runs them in that order and builds the table
(`columns`).
"""
