"""Readers that build the engine's model description from files: YAML/JSON model files
(model_file.py), URDF robot descriptions and overlays (urdf.py), and the public reader of parsed
documents that records every problem with its file line (reader.py). Readers sit above the
engine and build it; the engine never imports them."""
