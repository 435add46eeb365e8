"""Generators formulate answers from given evidence; they never retrieve (DESIGN.md 7)."""

from app.generators.base import Generation, Generator, GeneratorError
from app.generators.extractive import ExtractiveGenerator
from app.generators.openai_compat import OpenAICompatGenerator

__all__ = ["ExtractiveGenerator", "Generation", "Generator", "GeneratorError",
           "OpenAICompatGenerator"]
