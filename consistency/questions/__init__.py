"""Base-question pipelines: synthetic questions from a category and tags (appendix L), related
questions around a source question (appendix J), questions about what follows news articles (appendix K,
:mod:`.news`, imported on use), bodies for bare titles, and question verification."""

from .pipeline import QuestionReport, Window, build_questions, verify_questions
from .titles import related_titles, synthetic_titles

__all__ = ["QuestionReport", "Window", "build_questions", "related_titles", "synthetic_titles", "verify_questions"]
