"""Grammar: the structure a generation must follow, in the engine's IR."""

from __future__ import annotations

from xg2_jax import _core


class Grammar:
    """A context-free grammar over bytes (EBNF rules with UTF-8 character classes).

    Build one with :meth:`from_ebnf` or :meth:`builtin_json_grammar`. ``str(grammar)`` prints
    it back as EBNF that parses to the same grammar.

    Example:
        >>> g = Grammar.from_ebnf('root ::= "yes" | "no"')
        >>> print(g)
        root ::= ("yes" | "no")
    """

    def __init__(self, handle: "_core.Grammar"):
        self._handle = handle

    @classmethod
    def from_ebnf(cls, ebnf: str, *, root_rule_name: str = "root") -> "Grammar":
        """Parses a grammar in the GBNF / XGrammar EBNF dialect.

        Args:
            ebnf: the grammar text (``name ::= body`` rules, strings, ``[...]`` classes,
                ``.``, ``* + ?``, ``{n}``, ``{n,m}``, ``{n,}``, groups, ``|``, ``#`` comments,
                lookahead assertions ``(= ...)``).
            root_rule_name: the rule generation starts from.

        Returns:
            The parsed grammar.

        Raises:
            GrammarSyntaxError: malformed text; ``.line`` and ``.column`` locate it.
            GrammarError: no root rule.
        """
        return cls(_core.Grammar.from_ebnf(ebnf, root_rule_name))

    @classmethod
    def builtin_json_grammar(cls) -> "Grammar":
        """Returns the grammar of any JSON value (RFC 8259)."""
        return cls.from_ebnf(_core.Grammar.builtin_json_ebnf())

    def to_ebnf(self) -> str:
        """Returns the grammar as EBNF text (root rule first)."""
        return self._handle.to_ebnf()

    def __str__(self) -> str:
        return self.to_ebnf()

    def __repr__(self) -> str:
        return f"Grammar(num_rules={self._handle.num_rules})"
