"""Generators formulate answers from given evidence; they never retrieve (docs/architecture.md)."""
