"""Integrations with other libraries, each importing its library only when used."""
