"""Adapters that plug xg2-jax into serving engines.

``xg2_jax.integrations.vllm`` is vLLM's structured-output backend (``backend="xg2_jax"``);
:func:`register_vllm` is the ``vllm.general_plugins`` entry point that vLLM calls in each of
its processes.
"""

from __future__ import annotations

import warnings

__all__ = ["register_vllm"]


def register_vllm() -> None:
    """Registers the ``xg2_jax`` structured-output backend with vLLM (entry-point hook).

    vLLM calls every ``vllm.general_plugins`` hook at start-up, whatever backend it uses, so
    an installed vLLM release this adapter was not tested with gets a warning here (and the
    backend stays unregistered) instead of an error that would stop vLLM.
    """
    try:
        from xg2_jax.integrations import vllm as adapter
    except ImportError as error:
        warnings.warn(f"xg2_jax vLLM backend not registered: {error}", RuntimeWarning,
                      stacklevel=2)
        return
    adapter.register()
