"""Building consistency tuples from base questions.

An instantiator turns base questions (``P``, ``Q``, ``R``) into one tuple of a check: a title
and body for each field. Everything that must be exact (ids, dates, question types,
resolutions, provenance) is computed here from the check's declaration, never written by a model.

Imports are lazy: ``cc generate --help`` reads :mod:`.options` without loading numpy.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..names import lazy_exports

if TYPE_CHECKING:
    from .template import TemplateInstantiator, render_field
    from .tuples import Instantiated, assemble_tuple, choose_around, choose_bases, field_id, instantiate_all

_EXPORTS = {
    "TemplateInstantiator": ".template",
    "render_field": ".template",
    "Instantiated": ".tuples",
    "assemble_tuple": ".tuples",
    "choose_around": ".tuples",
    "choose_bases": ".tuples",
    "field_id": ".tuples",
    "instantiate_all": ".tuples",
}

__all__ = [
    "Instantiated",
    "TemplateInstantiator",
    "assemble_tuple",
    "choose_around",
    "choose_bases",
    "field_id",
    "instantiate_all",
    "render_field",
]

__getattr__ = lazy_exports(__name__, _EXPORTS)
