"""Model description, validation, topology (seed 003) and the compiled tree."""
from .description import WORLD, Body, Joint, ModelSpec, Origin, Spring

__all__ = ["WORLD", "Body", "Joint", "ModelSpec", "Origin", "Spring"]
