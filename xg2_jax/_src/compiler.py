"""GrammarCompiler and CompiledGrammar: grammars compiled against one tokenizer."""

from __future__ import annotations

import time
from typing import Any, Dict, Optional, Tuple, Union

from xg2_jax import _core
from xg2_jax._src import serialization_json
from xg2_jax._src.errors import InvalidArgumentError
from xg2_jax._src.grammar import Grammar
from xg2_jax._src.tokenizer import TokenizerInfo


class CompiledGrammar:
    """A grammar compiled for one vocabulary: its automaton and adaptive token-mask cache.

    Create it with :class:`GrammarCompiler`; share it between any number of matchers and
    threads.
    """

    def __init__(self, handle: "_core.CompiledGrammar", tokenizer_info: TokenizerInfo):
        self._handle = handle
        self._tokenizer_info = tokenizer_info
        self._background: Optional[PrecomputeHandle] = None  # the default mode's mask build

    @property
    def grammar(self) -> Grammar:
        """The source grammar."""
        return Grammar(self._handle.grammar)

    @property
    def tokenizer_info(self) -> TokenizerInfo:
        """The vocabulary the masks are computed for."""
        return self._tokenizer_info

    @property
    def memory_size_bytes(self) -> int:
        """Approximate heap size of the automaton and the built mask entries."""
        return self._handle.memory_size_bytes

    @property
    def num_states(self) -> int:
        """Number of automaton states over all rules."""
        return self._handle.num_states

    @property
    def has_rule_temperatures(self) -> bool:
        """Whether a rule of the grammar carries a sampling temperature (``[temperature=T]``),
        so that :attr:`GrammarMatcher.temperature` can differ from its default.

        Example:
            >>> from xg2_jax import TokenizerInfo, GrammarCompiler
            >>> compiler = GrammarCompiler(TokenizerInfo(["a", "b"]))
            >>> compiler.compile_grammar('root ::= "a" b   b[temperature=0.3] ::= "b"').has_rule_temperatures
            True
            >>> compiler.compile_grammar('root ::= "a" "b"').has_rule_temperatures
            False
        """
        return self._handle.has_rule_temperatures

    @property
    def num_scannable_states(self) -> int:
        """Number of states that consume bytes (one mask-cache entry each)."""
        return self._handle.num_scannable_states

    def mask_cache_stats(self) -> dict:
        """Entries built, their memory, and how many use each storage form; ``by_id_*``: the
        tokens read by id that the grammar's matchers share (entries, bytes, limit, hits,
        misses, evictions)."""
        return self._handle.mask_cache_stats()

    def precompute_async(self, *, budget_ms: Optional[float] = None,
                         num_threads: int = 1) -> "PrecomputeHandle":
        """Builds the mask entries of a lazily compiled grammar on a native thread (of a
        persistent batch-priority pool).

        Start it right after ``compile_*(..., lazy=True)`` and run the model's prefill
        meanwhile; masks that are not built yet when the first fill needs them are built
        then. Entries are built broadest first, so the costliest ones are ready soonest.

        Args:
            budget_ms: stop after this many milliseconds (None: build everything).
            num_threads: native threads to use.

        Returns:
            A handle to wait on or cancel; dropping it cancels the build.

        Example:
            >>> tok = TokenizerInfo(["a", "b", "</s>"], stop_token_ids=[2])
            >>> compiled = GrammarCompiler(tok).compile_grammar('root ::= "a"+', lazy=True)
            >>> handle = compiled.precompute_async(budget_ms=1000)
            >>> handle.wait(), handle.completed()
            (True, True)
        """
        task = _core.precompute_async(self._handle, num_threads,
                                      -1.0 if budget_ms is None else float(budget_ms))
        return PrecomputeHandle(task)

    def precompute(self, *, num_threads: int = 1) -> None:
        """Builds every mask-cache entry now (a lazily compiled grammar builds them on use)."""
        self._handle.precompute(num_threads)

    def serialize(self) -> bytes:
        """Serializes this compiled grammar (to store it or send it to another process).

        The blob holds the grammar, whether its masks were precomputed, and a fingerprint of
        the vocabulary, protected by a checksum; loading recompiles it. Load it with
        :meth:`deserialize` or :meth:`GrammarCompiler.deserialize`.

        Returns:
            The serialized bytes (they start with ``b"XG2C"``).

        Example:
            >>> tok = TokenizerInfo(["a", "b", "</s>"], stop_token_ids=[2])
            >>> data = GrammarCompiler(tok).compile_grammar('root ::= "a"+').serialize()
            >>> CompiledGrammar.deserialize(data, tok).grammar.to_ebnf() != ""
            True
        """
        return _core.serialize_compiled_grammar(self._handle)

    def serialize_json(self) -> str:
        """This compiled grammar as a JSON document: its grammar and the fingerprint of its
        vocabulary (not the vocabulary itself); loading recompiles.

        Example:
            >>> tok = TokenizerInfo(["a", "b", "</s>"], stop_token_ids=[2])
            >>> text = GrammarCompiler(tok).compile_grammar('root ::= "a"+').serialize_json()
            >>> str(CompiledGrammar.deserialize_json(text, tok).grammar).strip()
            'root ::= "a"+'
        """
        return serialization_json.compiled_to_json(self)

    @staticmethod
    def deserialize_json(json_str: Union[str, bytes],
                         tokenizer_info: TokenizerInfo) -> "CompiledGrammar":
        """Reads a document written by :meth:`serialize_json`, for the same vocabulary.

        Raises:
            InvalidJSONError: not JSON. DeserializeVersionError: another serialization
                version. DeserializeFormatError: a missing or ill-typed field, a grammar that
                does not parse, or another vocabulary.
        """
        compiler = GrammarCompiler(tokenizer_info, cache_enabled=False)
        return serialization_json.compiled_from_json(json_str, tokenizer_info, Grammar.from_ebnf,
                                                     compiler.compile_grammar)

    @staticmethod
    def deserialize(data: bytes, tokenizer_info: TokenizerInfo) -> "CompiledGrammar":
        """Loads a grammar written by :meth:`serialize`, for the same vocabulary.

        Args:
            data: the serialized bytes.
            tokenizer_info: the vocabulary the grammar was compiled for.

        Returns:
            The compiled grammar (masks precomputed if they were when it was serialized).

        Raises:
            InvalidArgumentError: the data is not an xg2-jax compiled grammar, has an
                unsupported format version, is truncated or corrupted (checksum mismatch), or
                was written for a different vocabulary.
        """
        handle = _core.deserialize_compiled_grammar(_as_bytes(data), tokenizer_info._handle)
        return CompiledGrammar(handle, tokenizer_info)


def cross_grammar_cache_stats() -> dict:
    """Statistics of the process-wide caches shared by all compiled grammars: mask-cache
    cores, rule automata (the ``automaton_*`` keys; rules of the same shape are built once),
    pruned suffixes (the ``suffix_*`` keys; a core's uncertain token suffixes pruned by what
    may follow its rule, reused where another grammar has the same core and follow language),
    the JSON Schema front end's key-exclusion automata (``key_exclusion_*``) and the automata
    of its patterns with minLength / maxLength (``pattern_automaton_*``, kept by the patterns'
    text), plus the minimal automata of the JSON Schema formats (``format_dfa_*``: one per
    format at most, built on first use, not counted in the totals and not emptied by
    :func:`clear_cross_grammar_cache`, as they depend on the format alone).

    Returns:
        A dict with ``hits``, ``misses``, ``entries``, ``bytes``, ``limit_bytes`` and
        ``evictions`` of the mask pool, the same six keys prefixed ``automaton_``,
        ``suffix_``, ``key_exclusion_``, ``pattern_automaton_`` and ``format_dfa_`` for the
        other caches, and ``total_bytes``, ``total_limit_bytes`` and ``budget_bytes`` (the
        limit they were split from, see :func:`set_cross_grammar_cache_limit`). ``bytes``
        count the entries and each cache's own tables. A :class:`GrammarCompiler`'s compiled
        grammars are counted by :meth:`GrammarCompiler.cache_stats`.

    Example:
        >>> {"bytes", "entries", "evictions", "automaton_bytes"} <= set(cross_grammar_cache_stats())
        True
    """
    return dict(_core.cross_grammar_cache_stats())


def set_cross_grammar_cache_limit(limit_bytes: int) -> None:
    """Sets the byte budget of the process-wide caches (default 384 MiB); 0 disables them.

    The mask pool gets the budget itself (least recently used cores are evicted), the
    automaton cache an eighth, the suffix pool a quarter, and the JSON Schema front end's
    key-exclusion and length-bounded pattern automata a sixteenth each: together at most 3/2
    of ``limit_bytes``. See the README's "Memory" section
    for the bound of a long-lived process.
    """
    if int(limit_bytes) < 0:
        raise InvalidArgumentError("limit_bytes must be >= 0")
    _core.set_cross_grammar_cache_limit(int(limit_bytes))


def set_limits(*, max_nesting_depth: Optional[int] = None) -> dict:
    """Sets process-wide front-end limits and returns the current ones.

    Args:
        max_nesting_depth: deepest nesting of EBNF expressions, regex groups and JSON
            documents (schemas, structural tags), 1 to 10000; Lark groups and JSON
            Schema subschemas nest to it but at most 1000 and 250 deep. Deeper input
            raises :class:`LimitExceededError` naming this limit. Default 10000.

    Returns:
        ``{"max_nesting_depth": ...}`` after the change.

    Example:
        >>> set_limits()["max_nesting_depth"] >= 1
        True
    """
    if max_nesting_depth is not None:
        _core.set_max_nesting_depth(int(max_nesting_depth))
    return {"max_nesting_depth": _core.max_nesting_depth()}


def clear_cross_grammar_cache() -> None:
    """Empties the pools and the front end's key-exclusion automata (compiled grammars keep
    what they already use), and returns the freed memory to the system."""
    _core.clear_cross_grammar_cache()


class PrecomputeHandle:
    """A running background build of mask entries (see :meth:`CompiledGrammar.precompute_async`)."""

    def __init__(self, task: "_core.PrecomputeTask"):
        self._task = task

    def wait(self, timeout: Optional[float] = None) -> bool:
        """Waits for the build (``timeout`` in seconds); True once it has finished.

        Raises:
            MemoryError: the build ran out of memory (so do :meth:`done` and later calls).
        """
        return self._task.wait(-1.0 if timeout is None else timeout * 1000.0)

    def done(self) -> bool:
        """True once the build has stopped (finished, out of budget, or cancelled)."""
        return self._task.done()

    def completed(self) -> bool:
        """True if every entry was built."""
        return self._task.completed()

    def cancel(self) -> None:
        """Stops the build after the entry in progress."""
        self._task.cancel()


DEFAULT_CACHE_LIMIT_BYTES = 256 << 20
"""Default byte limit of a :class:`GrammarCompiler`'s compiled-grammar cache."""

DEFAULT_BACKGROUND_BUDGET_MS = 200.0
"""Budget of the background mask build that the default compile mode (``lazy=None``) starts."""



class GrammarCompiler:
    """Compiles grammars for one tokenizer, caching results by grammar text.

    Args:
        tokenizer_info: the vocabulary.
        max_threads: threads used to build mask caches (0: all cores).
        cache_enabled: keep compiled grammars and return them for an identical grammar.
        cache_limit_bytes: byte limit of those kept grammars (automata, masks and tables;
            least recently used ones are dropped beyond it); -1: unbounded (xgrammar's
            default, not advised for a long-lived process), 0: keep none. Default 256 MiB.
        time_limit_s: an eager compile (front end, automata and masks) that takes longer
            raises :class:`LimitExceededError` naming this limit (None: no limit). The front
            end's share is checked inside its automaton products (JSON Schema patterns,
            ``not``, key exclusions). A lazy compile only bounds the front end and the
            automata; cancel a background build with its handle.
        max_nfa_states, max_dfa_states: size limits of one rule's automaton (the compile
            memory bound); a grammar over them raises :class:`LimitExceededError` naming the
            limit. Front-end nesting depth is set process-wide with :func:`set_limits`.
        max_memory_bytes: per-compile memory budget: a grammar whose automaton, or whose
            automaton and eagerly built masks, would take more raises
            :class:`LimitExceededError` naming ``max_memory_bytes`` (None: no budget).
        enable_dynamic_compilation: xgrammar's name for the default of the compile calls'
            ``lazy``: None (default) compiles lazily with a budgeted background mask build
            (see :meth:`compile_grammar`); True builds each token mask on first use only;
            False builds every mask while compiling (eager).

    Memory: an allocation failure inside a compile raises :class:`MemoryError` in the call,
    and the compiler stays usable.

    Example:
        >>> tok = TokenizerInfo(["a", "b", "</s>"], stop_token_ids=[2])
        >>> compiler = GrammarCompiler(tok)
        >>> compiled = compiler.compile_grammar('root ::= "a"+')
        >>> compiled.num_scannable_states > 0
        True
    """

    def __init__(self, tokenizer_info: TokenizerInfo, *, max_threads: int = 0,
                 cache_enabled: bool = True, cache_limit_bytes: int = DEFAULT_CACHE_LIMIT_BYTES,
                 time_limit_s: Optional[float] = None,
                 max_nfa_states: int = 4_000_000, max_dfa_states: int = 1_000_000,
                 max_memory_bytes: Optional[int] = None,
                 enable_dynamic_compilation: Optional[bool] = None):
        if not isinstance(tokenizer_info, TokenizerInfo):
            raise InvalidArgumentError(
                f"tokenizer_info must be a TokenizerInfo, not {type(tokenizer_info).__name__}")
        self._lazy = None if enable_dynamic_compilation is None else bool(enable_dynamic_compilation)
        if time_limit_s is not None and not time_limit_s > 0:
            raise ValueError("time_limit_s must be None or > 0")
        if max_nfa_states < 1 or max_dfa_states < 1:
            raise ValueError("max_nfa_states and max_dfa_states must be >= 1")
        if max_memory_bytes is not None and not max_memory_bytes > 0:
            raise ValueError("max_memory_bytes must be None or > 0")
        self._tokenizer_info = tokenizer_info
        self._time_limit_s = float(time_limit_s or 0.0)
        self._limits = dict(max_nfa_states=int(max_nfa_states), max_dfa_states=int(max_dfa_states),
                            max_memory_bytes=int(max_memory_bytes or 0))
        self._handle = _core.GrammarCompiler(tokenizer_info._handle, max_threads, cache_enabled,
                                             int(cache_limit_bytes))

    @property
    def tokenizer_info(self) -> TokenizerInfo:
        return self._tokenizer_info

    @property
    def enable_dynamic_compilation(self) -> Optional[bool]:
        """The compile mode given at construction: None (default mode: lazy with a budgeted
        background mask build), True (lazy) or False (eager)."""
        return self._lazy

    @property
    def cache_limit_bytes(self) -> int:
        """Byte limit of the compiled-grammar cache (-1: unbounded); settable."""
        return self._handle.cache_limit_bytes

    @cache_limit_bytes.setter
    def cache_limit_bytes(self, value: int) -> None:
        self._handle.cache_limit_bytes = int(value)

    def get_cache_size_bytes(self) -> int:
        """Bytes held by this compiler's compiled-grammar cache (``cache_stats()["bytes"]``)."""
        return int(self._handle.cache_stats()["bytes"])

    def cache_stats(self) -> dict:
        """This compiler's compiled-grammar cache: ``hits``, ``misses``, ``entries``,
        ``bytes`` (the kept grammars, measured as :attr:`CompiledGrammar.memory_size_bytes`,
        plus the table), ``limit_bytes`` (0 when the cache is disabled, -1 unbounded) and
        ``evictions``. The process-wide caches: :func:`cross_grammar_cache_stats`.

        Example:
            >>> tok = TokenizerInfo(["a", "b", "</s>"], stop_token_ids=[2])
            >>> compiler = GrammarCompiler(tok)
            >>> _ = compiler.compile_grammar('root ::= "a"'), compiler.compile_grammar('root ::= "a"')
            >>> compiler.cache_stats()["hits"], compiler.cache_stats()["entries"]
            (1, 1)
        """
        return dict(self._handle.cache_stats())

    def _front_end(self, build):
        """Runs a front end under the time limit; returns (grammar, seconds left or 0.0)."""
        if not self._time_limit_s:
            return build(), 0.0
        start = time.monotonic()
        with _core.TimeLimit(self._time_limit_s):
            grammar = build()
        # The compile gets what the front end left (at least a sliver, so it fails fast).
        return grammar, max(self._time_limit_s - (time.monotonic() - start), 1e-6)

    def _compile(self, grammar: Grammar, lazy: Optional[bool], max_unrolled_repeat: int,
                 time_left_s: Optional[float] = None) -> CompiledGrammar:
        lazy = self._lazy if lazy is None else lazy
        time_limit_s = self._time_limit_s if time_left_s is None else time_left_s
        handle = self._handle.compile(grammar._handle, lazy is False, max_unrolled_repeat,
                                      time_limit_s=time_limit_s, **self._limits)
        compiled = CompiledGrammar(handle, self._tokenizer_info)
        if lazy is None:
            # Kept on the grammar: the build runs until done or out of budget, and dropping
            # the grammar cancels it.
            compiled._background = compiled.precompute_async(budget_ms=DEFAULT_BACKGROUND_BUDGET_MS)
        return compiled

    def compile_grammar(self, grammar: Union[str, Grammar], *, root_rule_name: str = "root",
                        lazy: Optional[bool] = None, max_unrolled_repeat: int = 32) -> CompiledGrammar:
        """Compiles an EBNF grammar.

        Args:
            grammar: EBNF text or a :class:`Grammar`.
            root_rule_name: root rule when ``grammar`` is text.
            lazy: None (default): return before the token masks are built and build them
                on a background thread meanwhile (broadest first, for at most
                ``DEFAULT_BACKGROUND_BUDGET_MS``; a batch-priority pool thread, which does
                not preempt the caller), so a prefill hides the build; a fill
                that needs a mask not built yet builds it. If the build cannot run (out of
                memory), the masks are just built on use. True: each mask built on first use
                only. False: every mask built before returning (eager). The compiler's
                ``enable_dynamic_compilation`` (None, True, False) sets the default.
            max_unrolled_repeat: repetitions ``{n,m}`` with a bound above this run as counted
                loops (compile cost independent of the bound); smaller ones are unrolled.
                Both give the same masks.

        Returns:
            The compiled grammar. A grammar that :meth:`Grammar.from_structural_tag` built
            without a tokenizer from a tag with ``marker_tokens`` (Gemma 4's built-in tag) is
            lowered again with this compiler's tokenizer, so its markers match the special
            tokens (see :meth:`compile_structural_tag`).
        """
        if isinstance(grammar, str):
            grammar = Grammar.from_ebnf(grammar, root_rule_name=root_rule_name)
        if getattr(grammar, "_deferred_structural_tag", None) is not None:
            # Built from a structural tag whose markers wait for a tokenizer: this one binds them.
            tag, on_unsupported = grammar._deferred_structural_tag
            return self.compile_structural_tag(tag, on_unsupported=on_unsupported, lazy=lazy)
        return self._compile(grammar, lazy, max_unrolled_repeat)

    def compile_json_schema(self, schema: Any, *, any_whitespace: bool = True,
                            indent: Optional[int] = None,
                            separators: Optional[Tuple[str, str]] = None,
                            strict_mode: bool = True,
                            max_whitespace_cnt: Optional[int] = None,
                            any_order: bool = False, on_unsupported: str = "raise",
                            lazy: Optional[bool] = None) -> CompiledGrammar:
        """Compiles a JSON Schema; the options are those of :meth:`Grammar.from_json_schema`,
        ``lazy`` as in :meth:`compile_grammar`."""
        grammar, left = self._front_end(lambda: Grammar.from_json_schema(
            schema, any_whitespace=any_whitespace, indent=indent, separators=separators,
            strict_mode=strict_mode, max_whitespace_cnt=max_whitespace_cnt, any_order=any_order,
            on_unsupported=on_unsupported))
        return self._compile(grammar, lazy, 32, left or None)

    def compile_structural_tag(self, structural_tag: Any, triggers: Optional[list] = None, *,
                               on_unsupported: str = "raise",
                               lazy: Optional[bool] = None) -> CompiledGrammar:
        """Compiles a structural tag (see :meth:`Grammar.from_structural_tag`, also for the
        deprecated ``(tags, triggers)`` form); token-level formats resolve against this
        compiler's tokenizer; ``lazy`` as in :meth:`compile_grammar`."""
        if triggers is not None:
            from xg2_jax._src.structural_tag_legacy import legacy_structural_tag

            structural_tag = legacy_structural_tag(structural_tag, triggers)
        grammar, left = self._front_end(lambda: Grammar.from_structural_tag(
            structural_tag, tokenizer_info=self._tokenizer_info, on_unsupported=on_unsupported))
        return self._compile(grammar, lazy, 32, left or None)

    def compile_lark(self, lark_string: str, *,
                     named_grammars: Optional[Dict[str, Union[Grammar, str]]] = None,
                     lazy: Optional[bool] = None) -> CompiledGrammar:
        """Compiles a Lark grammar (see :meth:`Grammar.from_lark`); special tokens resolve
        against this compiler's tokenizer.

        Args:
            lark_string: the grammar text; it must define ``start``.
            named_grammars: grammars referenced as ``@name``.
            lazy: as in :meth:`compile_grammar`.

        Returns:
            The compiled grammar.

        Example:
            >>> from xg2_jax import GrammarCompiler, GrammarMatcher, TokenizerInfo
            >>> compiler = GrammarCompiler(TokenizerInfo(["a", "b", "</s>"], stop_token_ids=[2]))
            >>> m = GrammarMatcher(compiler.compile_lark('start: "a"+ "b"'))
            >>> m.accept_string("aab"), m.is_completed()
            (True, True)
        """
        grammar, left = self._front_end(lambda: Grammar.from_lark(
            lark_string, tokenizer_info=self._tokenizer_info, named_grammars=named_grammars))
        return self._compile(grammar, lazy, 32, left or None)

    def compile_regex(self, pattern: str, *, lazy: Optional[bool] = None) -> CompiledGrammar:
        """Compiles a regular expression (see :meth:`Grammar.from_regex`).

        Args:
            pattern: the regex; generation must match it in full.
            lazy: as in :meth:`compile_grammar`.

        Returns:
            The compiled grammar.

        Example:
            >>> from xg2_jax import GrammarCompiler, GrammarMatcher, TokenizerInfo
            >>> compiler = GrammarCompiler(TokenizerInfo(["a", "b", "</s>"], stop_token_ids=[2]))
            >>> m = GrammarMatcher(compiler.compile_regex("a+b"))
            >>> m.accept_string("ab"), m.is_completed()
            (True, True)
        """
        grammar, left = self._front_end(lambda: Grammar.from_regex(pattern))
        return self._compile(grammar, lazy, 32, left or None)

    def compile_builtin_json_grammar(self, *, lazy: Optional[bool] = None) -> CompiledGrammar:
        """Compiles the builtin grammar of any JSON value."""
        return self.compile_grammar(Grammar.builtin_json_grammar(), lazy=lazy)

    def clear_cache(self) -> None:
        """Drops the cached compiled grammars, empties the process-wide caches and returns
        the freed memory to the system."""
        self._handle.clear_cache()
        _core.clear_cross_grammar_cache()

    def deserialize(self, data: bytes) -> CompiledGrammar:
        """Loads a grammar written by :meth:`CompiledGrammar.serialize` with this compiler.

        The blob must have been written for this compiler's vocabulary; the result goes
        through (and into) this compiler's cache.

        Raises:
            InvalidArgumentError: as :meth:`CompiledGrammar.deserialize`.
        """
        handle = _core.deserialize_compiled_grammar_with_compiler(_as_bytes(data), self._handle)
        return CompiledGrammar(handle, self._tokenizer_info)


def _as_bytes(data: Any) -> bytes:
    if isinstance(data, (bytes, bytearray, memoryview)):
        return bytes(data)
    raise InvalidArgumentError(
        f"serialized grammar must be bytes; got {type(data).__name__}")
