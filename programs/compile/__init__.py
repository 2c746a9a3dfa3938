"""Compiling: calibrate the gate, compile the predictors with a DSPy teleprompter, save and load artifacts."""
