"""Training the local reader: the packaged GGUF's weights in torch, LoRA on its projections, the training loop on
the CPU, and the GGUF adapter file llama.cpp applies at run time.

torch is needed only here (`pip install -e ".[train]"`); nothing else in bookrag imports this package.
"""
