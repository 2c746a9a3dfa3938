"""Refusal: the retrieval-evidence gate in front of the answerer, and its calibration on labeled questions."""
