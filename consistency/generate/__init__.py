"""Building consistency tuples from base questions.

An instantiator turns base questions (``P``, ``Q``, ``R``) into one tuple of a check: a title
and body for each field. Everything that must be exact (ids, dates, question types,
resolutions, provenance) is computed here from the check's declaration, never written by a model.
"""

from .template import TemplateInstantiator, render_field
from .tuples import Instantiated, assemble_tuple, choose_around, choose_bases, field_id, instantiate_all

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
