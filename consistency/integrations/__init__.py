"""Bridges to other evaluation frameworks. Each subpackage imports its framework; nothing in the core
imports a subpackage, so an integration's extra is needed only when it is used."""
