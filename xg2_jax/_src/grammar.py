"""Grammar: the structure a generation must follow, in the engine's IR."""

from __future__ import annotations

import json as _json
import re as _re
import warnings as _warnings
from typing import Any, Dict, Optional, Tuple, Union

from xg2_jax import _core
from xg2_jax._src import serialization_json
from xg2_jax._src.errors import (
    GrammarError,
    GrammarSyntaxError,
    InvalidArgumentError,
    LimitExceededError,
    StructuralTagError,
    UnsupportedSchemaWarning,
)
from xg2_jax._src.model_formats_markers import bind_for_tokenizer
from xg2_jax._src.structural_tag import StructuralTag


def _schema_to_text(schema: Any) -> str:
    if isinstance(schema, str):
        return schema
    try:
        if isinstance(schema, (dict, bool)):
            return _json.dumps(schema)
        if isinstance(schema, type) and hasattr(schema, "model_json_schema"):
            return _json.dumps(schema.model_json_schema())
    except RecursionError:
        raise LimitExceededError("the schema is nested too deeply to serialise "
                                 "(the JSON depth limit is 1000)") from None
    raise TypeError("schema must be a JSON string, a dict, a bool or a pydantic model class")


def _check_utf8(text: str, source: str = "", phrase: str = "") -> None:
    """Raises GrammarSyntaxError at the first code point UTF-8 cannot encode (a lone surrogate).

    ``source`` ("EBNF lexer", "Lark") words the location as that front end's native errors do;
    ``phrase`` leads the reason (the core's JSON errors: "Failed to parse JSON: ").
    """
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as e:
        before = text[:e.start]
        line = before.count("\n") + 1
        column = e.start - (before.rfind("\n") + 1) + 1
        where = f"{source} error at line {line}, column {column}" if source else f"{line}:{column}"
        raise GrammarSyntaxError(
            f"{where}: {phrase}code point U+{ord(text[e.start]):04X} cannot be encoded as UTF-8",
            line, column) from None


def _lone_surrogate(text: str) -> Optional[str]:
    """``U+D800`` for the first code point of ``text`` UTF-8 cannot encode, else None."""
    try:
        text.encode("utf-8")
        return None
    except UnicodeEncodeError as e:
        return f"U+{ord(text[e.start]):04X}"


def _lone_surrogate_error(tag: Any) -> StructuralTagError:
    """The error for the first string (key or value) of a structural tag that UTF-8 cannot
    encode, at its path as the core names fields (``format.tags[0].begin``, then a JSON
    pointer inside a ``json_schema``). Iterative: a tag nests as deep as the depth limit."""
    stack = [(tag, "", False)]
    while stack:
        node, path, in_schema = stack.pop()
        if isinstance(node, str):
            code_point = _lone_surrogate(node)
            if code_point:
                return StructuralTagError(f"{path}: code point {code_point} cannot be encoded as UTF-8")
            continue
        if isinstance(node, dict):
            items = list(node.items())
        elif isinstance(node, (list, tuple)):
            items = list(enumerate(node))
        else:
            continue
        children = []
        for key, child in items:
            shown = str(key).encode("utf-8", "backslashreplace").decode("utf-8")
            if in_schema:
                step = f"{path}/{shown.replace('~', '~0').replace('/', '~1')}"
            elif isinstance(key, int):
                step = f"{path}[{key}]"
            else:
                step = f"{path}.{shown}" if path else shown
            code_point = _lone_surrogate(key) if isinstance(key, str) else None
            if code_point:
                return StructuralTagError(f"{step}: code point {code_point} in a key cannot be "
                                          "encoded as UTF-8")
            children.append((child, step, in_schema or key == "json_schema"))
        stack.extend(reversed(children))
    return StructuralTagError("(root): the tag cannot be encoded as UTF-8")


class Grammar:
    """A context-free grammar over bytes (EBNF rules with UTF-8 character classes).

    Build one with :meth:`from_ebnf` or :meth:`builtin_json_grammar`. ``str(grammar)`` prints
    it back as EBNF that parses to the same grammar.

    Example:
        >>> g = Grammar.from_ebnf('root ::= "yes" | "no"')
        >>> print(str(g).strip())
        root ::= "yes" | "no"
    """

    def __init__(self, handle: "_core.Grammar"):
        self._handle = handle
        # A structural tag with marker tokens lowered without a tokenizer (its markers as
        # text): GrammarCompiler.compile_grammar lowers it again with its tokenizer.
        self._deferred_structural_tag: Optional[Tuple[Any, str]] = None

    @classmethod
    def from_ebnf(cls, ebnf: str, *, root_rule_name: str = "root") -> "Grammar":
        """Parses a grammar in the GBNF / XGrammar EBNF dialect.

        Args:
            ebnf: the grammar text (``name ::= body`` rules, strings, ``[...]`` classes,
                ``.``, ``* + ?``, ``{n}``, ``{n,m}``, ``{n,}``, groups, ``|``, ``#`` comments,
                lookahead assertions ``(= ...)``). Engine extensions, also what ``str()``
                prints: ``AnyOrder(sep, required=(a, ...), optional=(...), repeated=(...),
                min=0, max=-1)`` (members joined by ``sep`` in any order: required ones once,
                optional ones at most once, repeated ones any number of times, min..max in
                all; members must not match the empty string; ``depends=((i, (j, k), (l)))``
                after ``max=-1``: when required-or-optional member i appears, so do j and k,
                or l), ``TagDispatch(...)`` and
                ``ByteDfa(...)``.
            root_rule_name: the rule generation starts from.

        Returns:
            The parsed grammar.

        Raises:
            GrammarSyntaxError: malformed text; ``.line`` and ``.column`` locate it.
            GrammarError: no root rule.
        """
        _check_utf8(ebnf, "EBNF lexer")
        bad = _lone_surrogate(root_rule_name) if isinstance(root_rule_name, str) else None
        if bad is not None:  # (the text cannot define it: it holds no such code point)
            raise GrammarError(f"The root rule with name {root_rule_name!r} is not found: code point {bad} "
                               "cannot be encoded as UTF-8")
        return cls(_core.Grammar.from_ebnf(ebnf, root_rule_name))

    @classmethod
    def from_regex(cls, pattern: str) -> "Grammar":
        """Builds a grammar matching exactly the strings that fully match a regex.

        The pattern uses ECMAScript (JavaScript) syntax on code points: literals, ``.``
        (any character but a line terminator), classes ``[...]`` with ranges and negation,
        ``\\d \\D \\w \\W \\s \\S``, escapes (``\\t \\n \\r \\f \\v \\0 \\xHH \\uHHHH
        \\u{H...} \\cX`` and escaped metacharacters), groups ``( )``, ``(?: )``,
        ``(?<name> )``, alternation ``|``, quantifiers ``* + ? {n} {n,} {n,m}`` and their lazy
        forms, and ``^`` / ``$`` at the start / end of the pattern or of a top-level
        alternative. Where Python's ``re`` reads a spelling otherwise, it is read as xgrammar
        reads it: ``\\a`` and ``\\e`` are BEL and ESC, and ``[]``, ``[^]``, ``a{,3}`` and a NUL
        character are refused.

        Args:
            pattern: the regular expression.

        Returns:
            A grammar whose root rule matches the strings ``pattern`` matches in full.

        Raises:
            GrammarSyntaxError: malformed, unsupported or ambiguous syntax (backreferences,
                lookaround, ``\\b``, ``\\p{...}``, the spellings above); ``.column`` is the 1-based
                character position of the construct.
            LimitExceededError: a repetition bound above 100000 or groups nested deeper
                than the nesting limit (:func:`xg2_jax.set_limits`, 10000 by default).

        Example:
            >>> print(Grammar.from_regex(r"[a-z]+@\\d{2,3}"))
            root ::= [a-z]+ "@" [0-9]{2,3}
            <BLANKLINE>
        """
        _check_utf8(pattern)
        return cls(_core.grammar_from_regex(pattern, python_dialect=True))

    @classmethod
    def from_lark(cls, lark_string: str, *, tokenizer_info: Any = None,
                  named_grammars: Optional[Dict[str, Union["Grammar", str]]] = None) -> "Grammar":
        """Parses a Lark grammar (the dialect of llguidance and xgrammar's ``from_lark``).

        The language is the one of the ``start`` rule, with terminals expanded in place (as
        lark's Earley parser with the dynamic lexer reads it). Supported: rules and
        TERMINALS, ``|``, groups, ``[optional]``, ``? * +``, ``~ n``, ``~ n..m``,
        ``{n}`` ``{n,m}`` ``{n,}`` ``{,m}``, strings with the ``i`` flag (ASCII), ``"a".."z"``,
        ``/regex/`` with flags ``i`` (ASCII), ``s``, ``u``, ``%import common.NAME`` (and
        ``-> ALIAS``, ``common (A, B)``), ``%ignore`` (ignored items may follow every lexeme of
        a rule; before the first one only with ``%grammar_options {"allow_initial_skip":
        true}``), ``%json {schema}``, ``<|special|>`` and ``<[ids]>`` special tokens (needs
        ``tokenizer_info``), ``@name`` grammars, ``%regex {"substring_chunks": [...]}`` /
        ``{"substring_chars": "..."}``, the rule attributes ``[lazy]``, ``[max_chars=N]``,
        ``[stop=M]`` and ``[suffix=M]`` (the body, then the marker ``M``, committing where a
        marker first ends). Priorities, ``?``/``!`` prefixes and ``-> alias`` are accepted and
        leave the language unchanged. Templates, ``%declare``, ``%override``, ``%extend``,
        other rule attributes (``capture``, ``max_tokens``, ...) and other modules raise
        :class:`GrammarSyntaxError` (``Lark error at line L, column C: ...``).

        Args:
            lark_string: the grammar text; it must define ``start``.
            tokenizer_info: resolves special tokens.
            named_grammars: grammars referenced as ``@name`` (keys without the ``@``); a
                string value is Lark text with its own ``start``, which may reference the
                other named grammars (not in a cycle).

        Returns:
            The grammar.

        Raises:
            GrammarSyntaxError: malformed or unsupported syntax, undefined or duplicate
                names, a terminal referring to a rule or to itself; ``.line`` and ``.column``
                locate it.

        Example:
            >>> g = Grammar.from_lark('''
            ... start: pair ("," pair)*
            ... pair: CNAME "=" SIGNED_NUMBER
            ... %import common (CNAME, SIGNED_NUMBER)
            ... ''')
            >>> print(str(g).splitlines()[0])
            root ::= pair ("," pair)*
        """
        _check_utf8(lark_string, "Lark")
        resolved = _resolve_named_grammars(named_grammars, tokenizer_info)
        names, grammars = list(resolved), [g._handle for g in resolved.values()]
        native_tok = getattr(tokenizer_info, "_handle", None) if tokenizer_info is not None else None
        return cls(_core.grammar_from_lark(lark_string, native_tok, names, grammars))

    @staticmethod
    def union(*grammars: "Grammar") -> "Grammar":
        """A grammar matching what any of ``grammars`` matches (xgrammar's ``Grammar.union``).

        Args:
            *grammars: one or more grammars.

        Returns:
            The union; each grammar's rules are copied under a ``g<i>_`` prefix.

        Example:
            >>> g = Grammar.union(Grammar.from_ebnf('root ::= "a"'), Grammar.from_regex("[0-9]+"))
            >>> print(str(g).splitlines()[0])
            root ::= g0_root | g1_root
        """
        return Grammar._combine(grammars, concatenate=False)

    @staticmethod
    def concat(*grammars: "Grammar") -> "Grammar":
        """A grammar matching ``grammars`` one after another (xgrammar's ``Grammar.concat``).

        Args:
            *grammars: one or more grammars.

        Returns:
            The concatenation; each grammar's rules are copied under a ``g<i>_`` prefix.

        Example:
            >>> g = Grammar.concat(Grammar.from_ebnf('root ::= "a"'), Grammar.from_regex("[0-9]+"))
            >>> print(str(g).splitlines()[0])
            root ::= g0_root g1_root
        """
        return Grammar._combine(grammars, concatenate=True)

    @staticmethod
    def _combine(grammars, *, concatenate: bool) -> "Grammar":
        if not grammars:
            raise InvalidArgumentError("at least one grammar is needed")
        for g in grammars:
            if not isinstance(g, Grammar):
                raise TypeError(f"expected Grammar, got {type(g).__name__}")
        return Grammar(_core.combine_grammars([g._handle for g in grammars], concatenate))

    @classmethod
    def builtin_json_grammar(cls) -> "Grammar":
        """Returns the grammar of a JSON (RFC 8259) object or array with no whitespace
        around it: xgrammar's builtin JSON grammar, which serving engines use for JSON mode
        (``response_format={"type": "json_object"}``).

        Returns:
            The grammar.

        Example:
            >>> from xg2_jax.testing import _is_grammar_accept_string
            >>> g = Grammar.builtin_json_grammar()
            >>> [_is_grammar_accept_string(g, s) for s in ('{"a": [1, "x"]}', '[]', '1', ' {}')]
            [True, True, False, False]
        """
        return cls.from_ebnf(_core.Grammar.builtin_json_ebnf())

    @classmethod
    def from_json_schema(cls, schema: Any, *, any_whitespace: bool = True,
                         indent: Optional[int] = None,
                         separators: Optional[Tuple[str, str]] = None,
                         strict_mode: bool = True,
                         max_whitespace_cnt: Optional[int] = None,
                         any_order: bool = False,
                         on_unsupported: str = "raise") -> "Grammar":
        """Converts a JSON Schema to the grammar of the JSON texts valid against it.

        Args:
            schema: JSON text, a dict (or bool), or a pydantic model class.
            any_whitespace: allow any whitespace between tokens; when False, output is
                formatted exactly like ``json.dumps(obj, indent=indent, separators=separators)``.
            indent: with ``any_whitespace=False``, the indentation (None: one line).
            separators: ``(item_separator, key_separator)``; default ``(", ", ": ")``
                without indent, ``(",", ": ")`` with indent; with ``any_whitespace``
                (default ``(",", ":")``) any whitespace may surround them, and the
                whitespace written in one is the least there is.
            strict_mode: properties and array items the schema does not declare are
                forbidden unless it explicitly allows them (xgrammar's meaning). When
                False, the schema's own defaults apply (extra properties allowed).
            max_whitespace_cnt: longest whitespace run with ``any_whitespace`` (None: any).
            any_order: properties in any order instead of declaration order, each at most
                once, required ones exactly once, with minProperties/maxProperties counted
                exactly (the parser tracks the set of properties written, so any number of
                properties compiles to one node). Also lets object ``const``/``enum`` values
                take their members in any order. Validation-style use (checking documents
                written by others) wants it; generation usually keeps the declared order.
            on_unsupported: ``"raise"`` raises :class:`UnsupportedSchemaError` for a keyword
                that cannot be enforced; ``"warn"`` ignores it and emits an
                :class:`UnsupportedSchemaWarning` naming the keyword and JSON pointer.

        Raises:
            UnsupportedSchemaError: an unsupported keyword (``on_unsupported="raise"``).
            GrammarError: an invalid schema (message carries the JSON pointer).
            GrammarSyntaxError: malformed JSON text.
            InvalidArgumentError: a separator that UTF-8 cannot encode (a lone surrogate).
        """
        grammar, _ = cls._from_json_schema_with_warnings(
            schema, any_whitespace=any_whitespace, indent=indent, separators=separators,
            strict_mode=strict_mode, max_whitespace_cnt=max_whitespace_cnt, any_order=any_order,
            on_unsupported=on_unsupported)
        return grammar

    @classmethod
    def _from_json_schema_with_warnings(cls, schema: Any, *, any_whitespace: bool = True,
                                        indent: Optional[int] = None,
                                        separators: Optional[Tuple[str, str]] = None,
                                        strict_mode: bool = True,
                                        max_whitespace_cnt: Optional[int] = None,
                                        any_order: bool = False,
                                        on_unsupported: str = "raise"):
        if on_unsupported not in ("raise", "warn"):
            raise ValueError('on_unsupported must be "raise" or "warn"')
        if indent is not None and indent < 0:
            raise ValueError("indent must be None or >= 0")
        item_sep, key_sep = separators if separators is not None else ("", "")
        for sep in (item_sep, key_sep):
            bad = _lone_surrogate(sep) if isinstance(sep, str) else None
            if bad is not None:
                raise InvalidArgumentError(f"separators {separators!r}: code point {bad} cannot be "
                                           "encoded as UTF-8")
        options = (any_whitespace, -1 if indent is None else int(indent), item_sep, key_sep,
                   strict_mode, -1 if max_whitespace_cnt is None else int(max_whitespace_cnt),
                   any_order, on_unsupported == "warn")
        # A dict goes to the core as it is (no json.dumps and re-parse); the core returns
        # None when it holds something only json.dumps' rules cover.
        result = None
        if isinstance(schema, (dict, bool)):
            result = _core.grammar_from_json_schema(schema, *options)
        if result is None:
            text = _schema_to_text(schema)
            _check_utf8(text, phrase="Failed to parse JSON: ")
            result = _core.grammar_from_json_schema(text, *options)
        handle, warns = result
        for w in warns:
            _warnings.warn(w, UnsupportedSchemaWarning, stacklevel=3)
        return cls(handle), list(warns)

    @classmethod
    def from_structural_tag(cls, structural_tag: Any, triggers: Optional[list] = None, *,
                            tokenizer_info: Any = None, on_unsupported: str = "raise") -> "Grammar":
        """Converts a structural tag (xgrammar's JSON DSL) to a grammar.

        Free text watched for triggers, end strings and excluded strings (``any_text``,
        ``triggered_tags``, ``dispatch``) becomes a TagDispatch node: an Aho-Corasick
        automaton inside the rule's byte automaton. Unbounded text inside a ``tag`` stops at
        the tag's first end string.

        Args:
            structural_tag: ``{"type": "structural_tag", "format": {...}}`` (or a bare
                format) as a dict or JSON text, or an object with ``to_dict()`` (the builder
                classes).
            triggers: only with xgrammar's deprecated form, where ``structural_tag`` is a list
                of ``StructuralTagItem(begin, schema, end)``: the strings that start a tag in
                free text (a DeprecationWarning, as xgrammar).
            tokenizer_info: resolves the token-level formats (``token``, ``exclude_token``,
                ``any_tokens``, ``token_triggered_tags``); not needed otherwise.
            on_unsupported: for ``json_schema`` contents, as in :meth:`from_json_schema`.

        Returns:
            The grammar.

        Raises:
            StructuralTagError: invalid structure; the message (after xgrammar's ``Invalid
                structural tag error:``) gives the path of the field (e.g.
                ``format.elements[1].tags[3].begin``) and says why.
            GrammarSyntaxError: malformed JSON text.

        Example:
            >>> g = Grammar.from_structural_tag({"type": "structural_tag", "format": {
            ...     "type": "triggered_tags", "triggers": ["<tool>"],
            ...     "tags": [{"begin": "<tool>", "content": {"type": "json_schema",
            ...               "json_schema": {"type": "object"}}, "end": "</tool>"}]}})
        """
        if on_unsupported not in ("raise", "warn"):
            raise ValueError('on_unsupported must be "raise" or "warn"')
        if triggers is not None:
            from xg2_jax._src.structural_tag_legacy import legacy_structural_tag

            structural_tag = legacy_structural_tag(structural_tag, triggers)
        structural_tag = _with_typed_markers(structural_tag)
        deferred = getattr(structural_tag, "marker_tokens", ()) and tokenizer_info is None
        text = _structural_tag_to_text(bind_for_tokenizer(structural_tag, tokenizer_info))
        _check_utf8(text, phrase="Failed to parse JSON: ")
        native_tok = getattr(tokenizer_info, "_handle", None) if tokenizer_info is not None else None
        handle, warns = _core.grammar_from_structural_tag(text, native_tok, on_unsupported == "warn")
        for w in warns:
            _warnings.warn(w, UnsupportedSchemaWarning, stacklevel=2)
        grammar = cls(handle)
        if deferred:
            grammar._deferred_structural_tag = (structural_tag, on_unsupported)
        return grammar

    def serialize_json(self) -> str:
        """This grammar as a JSON document (its EBNF text and root rule).

        Example:
            >>> g = Grammar.from_ebnf('root ::= "a" [0-9]*')
            >>> str(Grammar.deserialize_json(g.serialize_json())) == str(g)
            True
        """
        return serialization_json.grammar_to_json(self)

    @staticmethod
    def deserialize_json(json_string: Union[str, bytes]) -> "Grammar":
        """Reads a document written by :meth:`serialize_json`.

        Raises:
            InvalidJSONError: not JSON. DeserializeVersionError: another serialization
                version. DeserializeFormatError: a missing or ill-typed field, or EBNF that
                does not parse.
        """
        return serialization_json.grammar_from_json(json_string, Grammar.from_ebnf)

    def to_ebnf(self) -> str:
        """Returns the grammar as EBNF text (root rule first)."""
        return self._handle.to_ebnf()

    def __str__(self) -> str:
        return self.to_ebnf()

    def __repr__(self) -> str:
        return f"Grammar(num_rules={self._handle.num_rules})"


_NAME = _re.compile(r"[A-Za-z_][A-Za-z0-9_-]*")
_NAMED_REFERENCE = _re.compile(r"@([A-Za-z_][A-Za-z0-9_-]*)")


def _resolve_named_grammars(named_grammars: Any, tokenizer_info: Any) -> Dict[str, "Grammar"]:
    """The ``named_grammars`` of :meth:`Grammar.from_lark` as grammars: a Lark string is parsed
    with the other named grammars it references (``@name``), each one once.

    Args:
        named_grammars: None, or a dict of name to :class:`Grammar` or Lark text.
        tokenizer_info: resolves special tokens in the Lark texts.

    Returns:
        The grammars by name.

    Raises:
        TypeError: not a dict, a name not a string, a value neither a Grammar nor a string.
        InvalidArgumentError: a name that ``@name`` cannot spell.
        GrammarError: Lark texts that reference each other in a cycle (the cycle is named).
    """
    if named_grammars is None:
        return {}
    if not isinstance(named_grammars, dict):
        raise TypeError("named_grammars must be a dictionary of name -> Grammar or Lark string")
    for name, value in named_grammars.items():
        if not isinstance(name, str):
            raise TypeError("named grammar names must be strings")
        if not _NAME.fullmatch(name):  # `@name` could not reference it
            raise InvalidArgumentError(f"Invalid named grammar name {name!r}: use letters, digits, _ and -")
        if not isinstance(value, (Grammar, str)):
            raise TypeError("named grammar values must be Grammar instances or Lark strings")
    resolved: Dict[str, Grammar] = {}

    def resolve(name: str, path: list) -> Grammar:
        if name in resolved:
            return resolved[name]
        if name in path:  # a Lark text reaching itself again through @references
            cycle = path[path.index(name):] + [name]
            raise GrammarError("circular named grammar reference: " + " -> ".join("@" + n for n in cycle))
        value = named_grammars[name]
        if isinstance(value, str):
            # The texts it may reference: a name in a string literal only costs an extra parse.
            refs = [n for n in dict.fromkeys(_NAMED_REFERENCE.findall(value)) if n in named_grammars]
            inner = {n: resolve(n, path + [name]) for n in refs}
            value = Grammar.from_lark(value, tokenizer_info=tokenizer_info, named_grammars=inner)
        resolved[name] = value
        return value

    for name in named_grammars:
        resolve(name, [])
    return resolved


def _with_typed_markers(tag: Any) -> Any:
    """A dict or JSON envelope that sets ``marker_tokens`` as a :class:`StructuralTag` (whose
    markers are bound against the tokenizer); anything else as it is."""
    if isinstance(tag, str):
        if '"marker_tokens"' not in tag:
            return tag
        try:
            data = _json.loads(tag)
        except ValueError:
            return tag  # the native parser reports it with its position
    else:
        data = tag
    if isinstance(data, dict) and data.get("type") == "structural_tag" and "marker_tokens" in data:
        try:
            return StructuralTag.from_dict(data)
        except (TypeError, ValueError) as e:
            raise StructuralTagError(f"Invalid structural tag error: {e}") from None
    return tag


def _structural_tag_to_text(tag: Any) -> str:
    if isinstance(tag, str):
        return tag
    try:
        if hasattr(tag, "to_dict"):
            tag = tag.to_dict()
        text = _json.dumps(tag, ensure_ascii=False) if isinstance(tag, dict) else None
    except RecursionError:
        raise LimitExceededError("the structural tag is nested too deeply to serialise "
                                 "(the JSON depth limit is 1000)") from None
    if text is not None:
        try:
            text.encode("utf-8")
        except UnicodeEncodeError:
            raise _lone_surrogate_error(tag) from None
        return text
    raise TypeError(f"structural tag must be a dict, JSON text or a StructuralTag; got {type(tag).__name__}")
