"""Continuous batching: a fixed number of slots, queued requests each with its own structure.

Each request brings its prompt tokens, its structure (a :class:`~xg2_jax.Grammar`, a
:class:`~xg2_jax.CompiledGrammar`, a zero-argument function making one, or None for an
unconstrained request), its token budget, stop tokens and sampling settings. When a slot
frees, the next request is admitted:

1. its grammar compiles on a worker thread (the process-wide cross-grammar cache is shared
   by every request), started while it waits among the first ``compile_ahead`` queued
   requests or else at admission (lazily, building nothing ahead, when the model runs on the
   host CPU: see :func:`loop_compiler`); its prefill runs on the device meanwhile: the prompt,
   right-padded to a power-of-two bucket, fills a one-row cache that is written into the
   slot's row of the batch cache in the same jitted call;
2. the running rows do not wait for it: the slot joins the batch at the first step after its
   compile is done (its prefill logits give its first token);
3. every step dispatches the batch's forward pass first and, while the device runs it,
   accepts the sampled tokens into the matchers, retires finished rows, admits new requests
   and fills the next masks (native batch calls, GIL released); then one jitted call masks
   and samples every row with its own temperature (the grammar's rule temperature where it
   has one), top-p and seed.

A row's tokens depend only on its own prompt, grammar and seed: the forward pass of a row
reads only its own cache row, the prefill is always one row, and each row draws from
``fold_in(key(seed), step)``. Greedy decoding of a request gives the same tokens in a full
batch as alone (the tests check it).

Example:
    >>> import xg2_jax as xg
    >>> from xg2_jax import models
    >>> lm = models.load_pretrained(models.default_model_path())
    >>> tok = models.load_tokenizer_info(models.default_model_path(),
    ...                                  vocab_size=lm.config.vocab_size)
    >>> reqs = [Request([50256] + xg.greedy_tokenize(tok, b"Return JSON.\\n"),
    ...                 grammar=xg.Grammar.from_regex("[0-9]{3}"), max_tokens=8),
    ...         Request([50256], max_tokens=3)]
    >>> outs = generate_requests(lm, tok, reqs, num_slots=2, max_length=64)
    >>> [o.finish_reason for o in outs], len(outs[0].tokens)
    (['stop', 'length'], 4)
"""

from __future__ import annotations

import collections
import concurrent.futures
import dataclasses
import functools
import time
from typing import Any, Callable, Iterator, Optional, Sequence, Union

import jax
import jax.numpy as jnp
import numpy as np

from xg2_jax._src.batch import BatchGrammarMatcher
from xg2_jax._src.bitmask import get_bitmask_shape
from xg2_jax._src.compiler import CompiledGrammar, GrammarCompiler
from xg2_jax._src.grammar import Grammar
from xg2_jax._src.host_loop import HostMaskBuffers
from xg2_jax._src.masking import apply_token_bitmask, bitmask_has_allowed, top_p_filter
from xg2_jax._src.matcher import GrammarMatcher
from xg2_jax._src.tokenizer import TokenizerInfo

__all__ = ["BatchGenerator", "MaskEngine", "Request", "RequestOutput", "generate_requests",
           "loop_compiler", "slot_sample"]

Structure = Union[None, Grammar, CompiledGrammar, Callable[[], Union[Grammar, CompiledGrammar]]]
MIN_PREFILL_BUCKET = 16


@dataclasses.dataclass
class Request:
    """One generation request.

    Attributes:
        prompt_tokens: the prompt's token ids (at least one).
        grammar: the structure: a Grammar, a CompiledGrammar, a zero-argument callable
            returning either (run on the compile worker, so a slow front end also overlaps
            the prefill), or None (unconstrained).
        max_tokens: token budget (the stop token included).
        stop_token_ids: end an unconstrained request (default: the tokenizer's); a
            constrained one ends when its matcher terminates.
        temperature: 0 takes the argmax (greedy); otherwise the softmax temperature. Where
            the grammar's rules carry temperatures (``[temperature=T]``), the one the
            matcher reports at each step (:attr:`GrammarMatcher.temperature`) takes its
            place; this one is the default outside those rules.
        top_p: nucleus mass (1: all tokens).
        seed: the request's sampling seed.
        id: returned in the output.
    """

    prompt_tokens: Sequence[int]
    grammar: Structure = None
    max_tokens: int = 256
    stop_token_ids: Optional[Sequence[int]] = None
    temperature: float = 0.0
    top_p: float = 1.0
    seed: int = 0
    id: Any = None


@dataclasses.dataclass
class RequestOutput:
    """A finished request.

    Attributes:
        index: the request's position in submission order.
        id: the request's ``id``.
        tokens: generated token ids (the stop token included when one ended the request).
        finish_reason: ``"stop"`` (a stop token, or the grammar's end), ``"length"`` (the
            budget), or ``"error"``.
        error: what went wrong (``finish_reason == "error"``), else None.
        prompt_tokens: prompt length.
        compile_s: the grammar's compile time on the worker (0 when unconstrained).
        ttft_s: from admission to the first token read on the host (the prefill, the wait
            for the grammar, and one step).
        queued_s: from submission to admission.
        matcher: the request's matcher after the last token (None when unconstrained).
    """

    index: int
    id: Any
    tokens: list
    finish_reason: str
    error: Optional[str]
    prompt_tokens: int
    compile_s: float = 0.0
    ttft_s: float = 0.0
    queued_s: float = 0.0
    matcher: Optional[GrammarMatcher] = None


@dataclasses.dataclass
class _Slot:
    """A request in a slot: its compile future, matcher and progress."""

    index: int
    request: Request
    submitted: float
    admitted: float
    future: Optional[concurrent.futures.Future]
    matcher: Optional[GrammarMatcher] = None
    compile_s: float = 0.0
    first_token_at: float = 0.0
    tokens: list = dataclasses.field(default_factory=list)
    stops: frozenset = frozenset()
    budget: int = 0
    rule_temperatures: bool = False  # the grammar sets temperatures: read them every step


class MaskEngine:
    """Where the loop's grammars come from and how their masks are filled: xg2-jax by
    default; a benchmark plugs another engine in with the same three duties.

    Args:
        compiler: the :class:`~xg2_jax.GrammarCompiler` for the loop's vocabulary.

    A matcher needs ``accept_token(id) -> bool`` and ``is_terminated()``.
    """

    def __init__(self, compiler: GrammarCompiler):
        self.compiler = compiler
        self._batch = BatchGrammarMatcher()

    def compile(self, structure: Any) -> Any:
        """A matcher for a request's structure (a Grammar or CompiledGrammar); runs on a
        compile worker."""
        compiled = structure if isinstance(structure, CompiledGrammar) else \
            self.compiler.compile_grammar(structure)
        return GrammarMatcher(compiled)

    def fill(self, matchers: list, buf: np.ndarray, rows: list) -> None:
        """Writes each matcher's next-token mask into the whole row ``buf[rows[i]]`` (every
        word: the loop does not clear these rows first; native threads, GIL released)."""
        self._batch.batch_fill_next_token_bitmask(matchers, buf, rows)


def loop_compiler(tokenizer_info: TokenizerInfo, *,
                  platform: Optional[str] = None) -> GrammarCompiler:
    """The compiler :class:`BatchGenerator` makes when none is given.

    On an accelerator the host cores idle while the device steps, so the default compile
    mode's background mask build is free and shortens the mask tail. When the model runs on
    the host CPU, the forward pass uses the cores that build would take: every background
    millisecond comes out of the decode, so the loop compiles lazily (masks built on
    demand, memoized in the adaptive cache) and builds nothing ahead.

    Args:
        tokenizer_info: the vocabulary.
        platform: the JAX platform the model runs on (default: ``jax.default_backend()``).

    Returns:
        A :class:`~xg2_jax.GrammarCompiler` in the default mode, or lazy on ``"cpu"``.

    Example:
        >>> tok = TokenizerInfo(["a", "b", "</s>"], stop_token_ids=[2])
        >>> loop_compiler(tok, platform="cpu").enable_dynamic_compilation
        True
        >>> print(loop_compiler(tok, platform="tpu").enable_dynamic_compilation)
        None
    """
    on_host = (platform or jax.default_backend()) == "cpu"
    return GrammarCompiler(tokenizer_info, enable_dynamic_compilation=True if on_host else None)


def _bucket(n: int, limit: int) -> int:
    size = MIN_PREFILL_BUCKET
    while size < n:
        size *= 2
    return min(size, limit)


@functools.partial(jax.jit, static_argnames=("use_top_p",))
def slot_sample(logits: jax.Array, bitmask: jax.Array, temperature: jax.Array,
                top_p: jax.Array, seeds: jax.Array, steps: jax.Array, *,
                use_top_p: bool) -> jax.Array:
    """Masks and samples one token per row, each row with its own settings.

    Args:
        logits: float (B, V).
        bitmask: int32 (B, W).
        temperature: float32 (B,): 0 takes the argmax.
        top_p: float32 (B,) nucleus mass (used when ``use_top_p``).
        seeds: uint32 (B,) and steps: int32 (B,): a row draws from
            ``fold_in(key(seed), step)``, so its tokens do not depend on the other rows.
        use_top_p: static; False skips the sort.

    Returns:
        int32 (B,) tokens (an allowed token for every row whose mask allows one; a row whose
        mask allows nothing gets its argmax over the unmasked logits, never a NaN draw).

    Example:
        >>> slot_sample(jnp.array([[3.0, 2.0]]), jnp.array([[0b10]], jnp.int32),
        ...             jnp.zeros(1), jnp.ones(1), jnp.zeros(1, jnp.uint32),
        ...             jnp.zeros(1, jnp.int32), use_top_p=False).tolist()
        [1]
    """
    x = apply_token_bitmask(logits, bitmask).astype(jnp.float32)
    x = jnp.where(jnp.isnan(x), -jnp.inf, x)
    greedy = jnp.argmax(x, axis=-1).astype(jnp.int32)
    t = jnp.maximum(temperature, 1e-6)[:, None]
    scaled = x / t
    if use_top_p:
        scaled = top_p_filter(scaled, top_p)
    keys = jax.vmap(lambda s, n: jax.random.fold_in(jax.random.key(s), n))(seeds, steps)
    drawn = jax.vmap(lambda k, row: jax.random.categorical(k, row))(keys, scaled)
    drawn = drawn.astype(jnp.int32)
    ok = bitmask_has_allowed(bitmask, logits.shape[-1])
    return jnp.where((temperature > 0) & ok, drawn, greedy)


@functools.lru_cache(maxsize=16)
def _prefill_fn(step_fn: Callable) -> Callable:
    """One jitted ``(params, cache, pending (B, V), tokens (1, T), n, slot) -> (cache,
    pending)``: the prompt runs on a fresh one-row cache, which is then written into row
    ``slot``; its next-token logits go to row ``slot`` of ``pending`` (fixed shapes: one
    compilation per prompt bucket)."""

    def prefill(params, cache, pending, tokens, num_tokens, slot):
        row = jax.tree.map(lambda a: jnp.zeros((1,) + a.shape[1:], a.dtype), cache)
        logits, row = step_fn(params, row, tokens, num_tokens)

        def put(big, small):
            start = (slot,) + (0,) * (big.ndim - 1)
            return jax.lax.dynamic_update_slice(big, small.astype(big.dtype), start)

        pending = jax.lax.dynamic_update_slice(pending, logits.astype(pending.dtype), (slot, 0))
        return jax.tree.map(put, cache, row), pending

    return jax.jit(prefill, donate_argnums=(1, 2))


@functools.lru_cache(maxsize=16)
def _decode_fn(step_fn: Callable) -> Callable:
    """One jitted ``(params, cache, tokens (B,), feed (B,) int32) -> (logits, cache)``:
    rows with ``feed`` 0 do not advance."""
    return jax.jit(lambda params, cache, tokens, feed: step_fn(params, cache, tokens[:, None],
                                                               feed), donate_argnums=(1,))


@jax.jit
def _merge_rows(logits: jax.Array, pending: jax.Array, starting: jax.Array) -> jax.Array:
    """Rows that start this step take their prefill logits."""
    return jnp.where(starting[:, None], pending, logits)


class BatchGenerator:
    """Continuous batching over a model's step function (see the module docstring).

    Args:
        lm: a :class:`~xg2_jax.models.CausalLM` (``step_fn(params, cache, tokens,
            num_tokens)``, ``params``, ``init_cache``, ``config``).
        tokenizer_info: the vocabulary the grammars compile against.
        num_slots: rows decoded together.
        max_length: cache positions per slot (prompt plus generated tokens); a request's
            budget is cut to fit, a longer prompt fails alone.
        compiler: a :class:`~xg2_jax.GrammarCompiler` (default: :func:`loop_compiler` over
            ``tokenizer_info``).
        compile_workers: threads compiling requests' grammars.
        compile_ahead: how many queued requests (from the front of the queue) have their
            grammar compiled before a slot frees for them (default: ``num_slots``), as vLLM
            compiles a grammar when its request arrives: the compile then overlaps the
            running rows' steps instead of delaying the new row's first token. 0 compiles
            only at admission. At most this many queued compiles are held.
        engine: a :class:`MaskEngine` (default: xg2-jax over ``compiler``).

    Use :meth:`submit` then iterate :meth:`run` (outputs in completion order), or call
    :func:`generate_requests`.
    """

    def __init__(self, lm: Any, tokenizer_info: TokenizerInfo, *, num_slots: int = 16,
                 max_length: int = 1024, compiler: Optional[GrammarCompiler] = None,
                 compile_workers: int = 2, compile_ahead: Optional[int] = None,
                 engine: Optional[MaskEngine] = None):
        if num_slots < 1:
            raise ValueError("num_slots must be at least 1")
        if compile_ahead is not None and compile_ahead < 0:
            raise ValueError("compile_ahead must be >= 0")
        limit = lm.config.max_position_embeddings
        if max_length > limit:
            raise ValueError(f"max_length {max_length} exceeds the model's {limit} positions")
        self.lm, self.tokenizer_info = lm, tokenizer_info
        self.num_slots, self.max_length = num_slots, max_length
        self.engine = engine or MaskEngine(compiler or loop_compiler(tokenizer_info))
        self.vocab_size = int(lm.config.vocab_size)
        self.words = get_bitmask_shape(1, max(self.vocab_size, tokenizer_info.vocab_size))[1]
        self._executor = concurrent.futures.ThreadPoolExecutor(
            max_workers=compile_workers, thread_name_prefix="xg2-compile")
        self._queue: collections.deque = collections.deque()
        self.compile_ahead = num_slots if compile_ahead is None else compile_ahead
        self._compiling: dict[int, concurrent.futures.Future] = {}  # queued index -> compile
        self._submitted = 0
        self.stats = {"steps": 0, "host_s": 0.0, "tokens": 0}

    def submit(self, request: Request) -> int:
        """Queues ``request``; returns its index (submission order)."""
        index = self._submitted
        self._submitted += 1
        self._queue.append((index, request, time.perf_counter()))
        return index

    def warm_up(self, prompt_lengths: Sequence[int]) -> float:
        """Compiles the jitted prefill of every bucket these prompt lengths fall in, the
        decode step and the sampler, so that timings (TTFT) exclude JAX's compilation.
        Call before :meth:`submit`; returns the seconds it took."""
        t0 = time.perf_counter()
        buckets = sorted({_bucket(max(1, n), self.max_length) for n in prompt_lengths
                          if 0 < n < self.max_length})
        saved, self._queue = self._queue, collections.deque()
        try:
            for i, width in enumerate(buckets):
                self._queue.append((-1 - i, Request([0] * min(width, self.max_length - 2),
                                                    max_tokens=2, stop_token_ids=[]), t0))
            for _ in self.run():
                pass
        finally:
            self._queue = saved
            self.stats = {"steps": 0, "host_s": 0.0, "tokens": 0}
        return time.perf_counter() - t0

    def close(self) -> None:
        """Stops the compile workers."""
        self._compiling.clear()
        self._executor.shutdown(wait=False, cancel_futures=True)

    # ----------------------------------------------------------------- admission
    def _compile(self, grammar: Structure) -> tuple[Any, float]:
        t0 = time.perf_counter()
        if callable(grammar) and not isinstance(grammar, (Grammar, CompiledGrammar)):
            grammar = grammar()
        matcher = self.engine.compile(grammar)
        return matcher, time.perf_counter() - t0

    def _compile_queued(self) -> None:
        """Starts the compiles of the first ``compile_ahead`` queued requests (valid ones with
        a structure; the others are marked None, so each is looked at once)."""
        for position, (index, request, _) in enumerate(self._queue):
            if position >= self.compile_ahead:
                break
            if index in self._compiling:
                continue
            compiles = request.grammar is not None and self._check(request) is None
            self._compiling[index] = (self._executor.submit(self._compile, request.grammar)
                                      if compiles else None)

    def _check(self, request: Request) -> Optional[str]:
        ids = np.asarray(request.prompt_tokens, dtype=np.int64).reshape(-1)
        if ids.size == 0:
            return "the prompt has no tokens"
        if ids.min() < 0 or ids.max() >= self.vocab_size:
            return f"prompt token ids must lie in [0, {self.vocab_size})"
        if ids.size >= self.max_length:
            return (f"the prompt has {ids.size} tokens; the cache holds {self.max_length} "
                    "positions (raise max_length)")
        if request.max_tokens < 1:
            return "max_tokens must be at least 1"
        if not request.temperature >= 0 or not 0 < request.top_p <= 1:
            return "temperature must be >= 0 and top_p in (0, 1]"
        return None

    def _admit(self, slot_id: int, cache, pending):
        """Moves the next valid queued request into ``slot_id`` (its prefill logits into row
        ``slot_id`` of ``pending``); invalid ones finish at once. Returns ``(slot or None,
        cache, pending, outputs of rejected requests)``."""
        rejected = []
        while self._queue:
            index, request, submitted = self._queue.popleft()
            queued_compile = self._compiling.pop(index, None)
            problem = self._check(request)
            if problem is not None:
                rejected.append(RequestOutput(index, request.id, [], "error", problem,
                                              len(request.prompt_tokens)))
                continue
            now = time.perf_counter()
            future = queued_compile
            if future is None and request.grammar is not None:
                future = self._executor.submit(self._compile, request.grammar)
            prompt = np.asarray(request.prompt_tokens, dtype=np.int32).reshape(-1)
            width = _bucket(prompt.size, self.max_length)
            tokens = np.zeros((1, width), np.int32)
            tokens[0, :prompt.size] = prompt
            cache, pending = _prefill_fn(self.lm.step_fn)(
                self.lm.params, cache, pending, tokens, np.array([prompt.size], np.int32),
                np.int32(slot_id))
            stops = request.stop_token_ids
            if stops is None:
                stops = self.tokenizer_info.stop_token_ids
            slot = _Slot(index, request, submitted, now, future,
                         stops=frozenset(int(t) for t in stops),
                         budget=min(request.max_tokens, self.max_length - prompt.size))
            return slot, cache, pending, rejected
        return None, cache, pending, rejected

    def _start(self, slot: _Slot) -> Optional[str]:
        """The slot's compile is done: its matcher (or the compile error)."""
        if slot.future is None:
            return None
        try:
            slot.matcher, slot.compile_s = slot.future.result()
        except Exception as e:  # noqa: BLE001 - one bad request fails alone
            return f"{type(e).__name__}: {e}"
        slot.rule_temperatures = (isinstance(slot.matcher, GrammarMatcher)
                                  and slot.matcher.compiled_grammar.has_rule_temperatures)
        return None

    # ----------------------------------------------------------------- the loop
    def _finish(self, slot: _Slot, reason: str, error: Optional[str] = None) -> RequestOutput:
        return RequestOutput(slot.index, slot.request.id, slot.tokens, reason, error,
                             len(slot.request.prompt_tokens), slot.compile_s,
                             slot.first_token_at - slot.admitted if slot.first_token_at else 0.0,
                             slot.admitted - slot.submitted, slot.matcher)

    def _accept(self, slot: _Slot, token: int) -> Optional[RequestOutput]:
        """Records ``token``; returns the output when the request ends with it."""
        if not slot.tokens:
            slot.first_token_at = time.perf_counter()
        if slot.matcher is not None and not slot.matcher.accept_token(token):
            return self._finish(slot, "error", f"the matcher rejected sampled token {token}")
        slot.tokens.append(token)
        if slot.matcher is not None and slot.matcher.is_terminated():
            return self._finish(slot, "stop")
        if slot.matcher is None and token in slot.stops:
            return self._finish(slot, "stop")
        if len(slot.tokens) >= slot.budget:
            return self._finish(slot, "length")
        return None

    def run(self) -> Iterator[RequestOutput]:
        """Decodes until every submitted request has finished, yielding each output as its
        request ends (completion order)."""
        b, lm = self.num_slots, self.lm
        cache = lm.init_cache(batch_size=b, max_length=self.max_length)
        decode = _decode_fn(lm.step_fn)
        slots: list[Optional[_Slot]] = [None] * b
        running = np.zeros(b, bool)  # sampled a token that the next step feeds
        buffers = HostMaskBuffers((b, self.words))
        temps = np.zeros(b, np.float32)
        top_p = np.ones(b, np.float32)
        seeds = np.zeros(b, np.uint32)
        steps = np.zeros(b, np.int32)
        tokens_dev = jnp.zeros((b,), jnp.int32)
        vocab = self.vocab_size
        pending = jnp.zeros((b, vocab), jnp.float32)  # prefill logits of admitted rows
        logits = jnp.zeros((b, vocab), jnp.float32)
        while True:
            host_t0 = time.perf_counter()
            if running.any():  # 1. the forward pass first: the device runs while we work
                logits, cache = decode(lm.params, cache, tokens_dev, running.astype(np.int32))
                fed = np.asarray(tokens_dev)  # the tokens sampled last step
                host_t0 = time.perf_counter()
                for i in np.flatnonzero(running).tolist():  # 2. accept and retire
                    out = self._accept(slots[i], int(fed[i]))
                    steps[i] += 1
                    if out is not None:
                        slots[i], running[i] = None, False
                        yield out
            for i in range(b):  # 3. admit into free slots
                if slots[i] is None and self._queue:
                    slot, cache, pending, rejected = self._admit(i, cache, pending)
                    yield from rejected
                    slots[i] = slot
            self._compile_queued()  # the next requests compile while these rows step
            if not any(s is not None for s in slots):
                return
            ready = [i for i, s in enumerate(slots) if s is not None and not running[i]
                     and (s.future is None or s.future.done())]
            starting = []
            for i in ready:  # 4. rows whose grammar is ready join the batch
                s = slots[i]
                problem = self._start(s)
                if problem is not None:
                    slots[i] = None
                    yield self._finish(s, "error", problem)
                    continue
                temps[i], top_p[i] = s.request.temperature, s.request.top_p
                seeds[i], steps[i] = np.uint32(s.request.seed & 0xFFFFFFFF), 0
                starting.append(i)
            live = running.copy()
            live[starting] = True
            if not live.any():  # every slot waits for its compile: wait for the first
                waiting = [s.future for s in slots if s is not None and s.future is not None]
                concurrent.futures.wait(waiting, return_when=concurrent.futures.FIRST_COMPLETED)
                continue
            t_wait = time.perf_counter()
            k, buf = buffers.acquire()  # 5. masks of the running and starting rows
            host_t0 += time.perf_counter() - t_wait  # a device wait, not host work
            self._fill(slots, live, buf)
            self._rule_temperatures(slots, live, temps)
            if starting:
                start_mask = np.zeros(b, bool)
                start_mask[starting] = True
                logits = _merge_rows(logits, pending, start_mask)
            self.stats["host_s"] += time.perf_counter() - host_t0
            tokens_dev = slot_sample(logits, buf, temps, top_p, seeds, steps,
                                     use_top_p=bool((top_p[live] < 1).any()))
            buffers.release(k, tokens_dev)
            running = live
            self.stats["steps"] += 1
            self.stats["tokens"] += int(live.sum())

    @staticmethod
    def _rule_temperatures(slots: list, live: np.ndarray, temps: np.ndarray) -> None:
        """The temperature of each live row whose grammar sets them: the matcher's at this
        point, else the request's."""
        for i in np.flatnonzero(live).tolist():
            s = slots[i]
            if s.rule_temperatures:
                t = s.matcher.temperature
                temps[i] = s.request.temperature if t is None else t

    def _fill(self, slots: list, live: np.ndarray, buf: np.ndarray) -> None:
        """Next-token masks: constrained live rows from their matchers, the rest all-allowed."""
        rows = [i for i in np.flatnonzero(live).tolist() if slots[i].matcher is not None]
        others = np.ones(len(slots), bool)
        others[rows] = False
        buf[others] = -1  # constrained rows are written whole by the fill
        if rows:
            self.engine.fill([slots[i].matcher for i in rows], buf, rows)


def generate_requests(lm: Any, tokenizer_info: TokenizerInfo, requests: Sequence[Request], *,
                      num_slots: int = 16, max_length: int = 1024,
                      compiler: Optional[GrammarCompiler] = None,
                      engine: Optional[MaskEngine] = None,
                      on_output: Optional[Callable[[RequestOutput], None]] = None
                      ) -> list[RequestOutput]:
    """Runs ``requests`` through a :class:`BatchGenerator`; outputs in input order.

    Args:
        lm, tokenizer_info, num_slots, max_length, compiler, engine: see
            :class:`BatchGenerator`.
        requests: the :class:`Request` list.
        on_output: called with each output as its request finishes (completion order), e.g.
            for a progress bar.

    Returns:
        One :class:`RequestOutput` per request, in the order given.

    Example: see the module docstring.
    """
    gen = BatchGenerator(lm, tokenizer_info, num_slots=num_slots, max_length=max_length,
                         compiler=compiler, engine=engine)
    try:
        for r in requests:
            gen.submit(r)
        outputs: list[Optional[RequestOutput]] = [None] * len(requests)
        for out in gen.run():
            outputs[out.index] = out
            if on_output is not None:
                on_output(out)
        return outputs  # type: ignore[return-value]
    finally:
        gen.close()
