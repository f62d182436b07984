"""A vLLM logits processor that makes a model end its reasoning at a chosen output position.

The tiny test model never emits ``</think>`` on its own (the token's embedding is zero), so the
reasoning tests ask for it: a request with ``extra_args={"think_end_at": K, "think_end_id":
ID}`` gets every logit but ``ID``'s set to ``-inf`` at output position ``K``, and is left alone
everywhere else. vLLM applies logits processors after the structured-output bitmask, so if the
grammar had (wrongly) masked the reasoning, ``</think>`` would be ``-inf`` too and the row would
allow nothing: the forced token shows whether the reasoning was left unconstrained.

Loaded by name (``logits_processors=["think_end:ForceThinkEnd"]``, with this folder on the
path); vLLM 0.32 refuses custom logits processors together with speculative decoding.
"""

from __future__ import annotations

from typing import Optional

import torch
from vllm.v1.sample.logits_processor import BatchUpdate, LogitsProcessor
from vllm.v1.sample.logits_processor.builtin import process_dict_updates


class ForceThinkEnd(LogitsProcessor):
    """Forces ``think_end_id`` at output position ``think_end_at`` (per-request extra args)."""

    def __init__(self, vllm_config, device: torch.device, is_pin_memory: bool):
        # batch row -> (position to force at, token to force, the request's live output ids)
        self.rows: dict[int, tuple[int, int, list[int]]] = {}

    def is_argmax_invariant(self) -> bool:
        return False  # it changes the greedy choice at the forced position

    @staticmethod
    def _entry(params, _prompt_ids, output_ids: list[int]) -> Optional[tuple[int, int, list[int]]]:
        extra = params.extra_args or {}
        if "think_end_at" not in extra:
            return None
        return int(extra["think_end_at"]), int(extra["think_end_id"]), output_ids

    def update_state(self, batch_update: Optional[BatchUpdate]) -> None:
        process_dict_updates(self.rows, batch_update, self._entry)

    def apply(self, logits: torch.Tensor) -> torch.Tensor:
        for row, (position, token, output_ids) in self.rows.items():
            if len(output_ids) == position:
                kept = logits[row, token].clone()
                logits[row] = float("-inf")
                logits[row, token] = kept
        return logits
