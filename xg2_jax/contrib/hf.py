"""A Hugging Face transformers logits processor that constrains ``model.generate`` to a
grammar (xgrammar's ``xgrammar.contrib.hf.LogitsProcessor``).

Neither transformers nor torch is imported by this module: the processor is a plain callable
``(input_ids, scores) -> scores``, which ``transformers`` accepts in ``logits_processor=``,
and it works on the torch tensors transformers passes in.

Example (needs torch and transformers)::

    compiled = xg2_jax.GrammarCompiler(xg2_jax.TokenizerInfo.from_huggingface(tok))
    processor = LogitsProcessor(compiled.compile_builtin_json_grammar())
    model.generate(**inputs, logits_processor=[processor], max_new_tokens=64)
"""

from __future__ import annotations

from typing import Sequence, Union

from xg2_jax._src.bitmask import allocate_host_bitmask, apply_token_bitmask_inplace
from xg2_jax._src.compiler import CompiledGrammar
from xg2_jax._src.errors import InvalidArgumentError, MatcherStateError
from xg2_jax._src.matcher import GrammarMatcher

__all__ = ["LogitsProcessor"]


class LogitsProcessor:
    """Masks the next-token scores of every row of a ``generate`` batch to its grammar.

    Args:
        compiled_grammar: one grammar for every row, or one per row.

    A processor serves one ``generate`` call: the first call sees the prompts, each later
    call accepts the token sampled for each row (a row whose grammar terminated is left
    unmasked, as transformers pads it). Create a new processor per call.
    """

    def __init__(self, compiled_grammar: Union[CompiledGrammar, Sequence[CompiledGrammar]]):
        grammars = ([compiled_grammar] if isinstance(compiled_grammar, CompiledGrammar)
                    else list(compiled_grammar))
        if not grammars or not all(isinstance(g, CompiledGrammar) for g in grammars):
            raise InvalidArgumentError("compiled_grammar must be a CompiledGrammar or a "
                                       "non-empty list of them")
        self.compiled_grammars = grammars
        self.matchers: list[GrammarMatcher] = []
        self._bitmask = None
        self._prompt_len = -1

    def _start(self, batch_size: int) -> None:
        if len(self.compiled_grammars) not in (1, batch_size):
            raise InvalidArgumentError(f"{len(self.compiled_grammars)} grammars for a batch "
                                       f"of {batch_size}")
        grammars = self.compiled_grammars * (batch_size if len(self.compiled_grammars) == 1
                                             else 1)
        self.matchers = [GrammarMatcher(g) for g in grammars]
        vocab_size = max(g.tokenizer_info.vocab_size for g in grammars)
        self._bitmask = allocate_host_bitmask(batch_size, vocab_size)

    def __call__(self, input_ids, scores):
        """Masks ``scores`` (torch ``(batch, V)``) in place and returns it.

        Raises:
            MatcherStateError: a row's last token breaks its grammar (the scores were not
                masked with this processor, or it is reused across ``generate`` calls).
        """
        import torch  # the caller's tensors are torch tensors

        batch_size, length = input_ids.shape
        if not self.matchers:
            self._start(batch_size)
            self._prompt_len = length
        elif length > self._prompt_len:
            last = input_ids[:, -1].tolist()
            for row, (matcher, token) in enumerate(zip(self.matchers, last)):
                if not matcher.is_terminated() and not matcher.accept_token(token):
                    raise MatcherStateError(f"row {row}: token {token} breaks the grammar")
        active = [row for row, m in enumerate(self.matchers) if not m.is_terminated()]
        for row in active:
            self.matchers[row].fill_next_token_bitmask(self._bitmask, row)
        if active:
            mask = torch.from_numpy(self._bitmask)
            width = min(scores.shape[-1], 32 * mask.shape[1])
            apply_token_bitmask_inplace(scores, mask, vocab_size=width, indices=active)
            if scores.shape[-1] > width:  # ids past the bitmask: not in the vocabulary
                scores[active, width:] = float("-inf")
        return scores
