"""The endpoint litellm will really call for a model, as a digest: what the reply cache's key and
the run fingerprint hold, so a reply is never reused across endpoints and no secret is stored.

litellm resolves the endpoint of a call from, in order: the call's `api_base`, the module-wide
`litellm.api_base`, the provider's own variables (`OPENAI_BASE_URL`, `OPENAI_API_BASE`,
`HOSTED_VLLM_API_BASE`, `OLLAMA_API_BASE`, `AZURE_API_BASE`, ...) and the provider's default.
`endpoint_identity` follows it: the explicit base when one is given, else litellm's module-wide
one, else what `litellm.get_llm_provider` resolves for the model (its dynamic base, or the
provider's default through `litellm.get_api_base`), together with every variable of the
provider's prefix naming an address (a name containing BASE, URL, ENDPOINT or HOST), whichever
litellm picks among them. `endpoint_digest` is its SHA-256: the address may carry credentials.
Asking litellm needs its import (seconds); an explicit base and the offline model do not.
"""

from __future__ import annotations

import hashlib
import os
import re
from collections.abc import Mapping

from rag_eval_pipeline.settings import OFFLINE_MODEL

OFFLINE_ENDPOINT = "offline"
_ADDRESS_WORD = re.compile(r"BASE|URL|ENDPOINT|HOST")


def endpoint_identity(
    model: str, api_base: str | None, environ: Mapping[str, str] = os.environ
) -> str:
    """What names the endpoint a call of `model` (with `api_base`) reaches, in plain text."""
    if api_base:
        return f"api_base={api_base}"
    import litellm  # here, not at import: importing litellm takes seconds

    if litellm.api_base:
        return f"litellm.api_base={litellm.api_base}"
    try:
        _, provider, _, dynamic_base = litellm.get_llm_provider(model)
    except Exception:  # not a model litellm knows: the name is all there is
        return f"model={model}"
    prefix = f"{provider.upper()}_"
    variables = sorted(
        f"{name}={value}"
        for name, value in environ.items()
        if name.startswith(prefix) and _ADDRESS_WORD.search(name[len(prefix) :])
    )
    default = dynamic_base or litellm.get_api_base(model, {})
    return "|".join([f"provider={provider}", f"base={default}", *variables])


def endpoint_digest(
    model: str, api_base: str | None, environ: Mapping[str, str] = os.environ
) -> str:
    """The SHA-256 (hex) of `endpoint_identity`; `offline` for the local, offline model."""
    if model == OFFLINE_MODEL:
        return OFFLINE_ENDPOINT
    identity = endpoint_identity(model, api_base, environ)
    return hashlib.sha256(identity.encode("utf-8")).hexdigest()
