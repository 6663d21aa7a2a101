"""Model description, validation, topology (No's method) and the compiled tree."""

from .description import WORLD, Body, Joint, ModelSpec, Origin, Spring

__all__ = ["WORLD", "Body", "Joint", "ModelSpec", "Origin", "Spring"]
