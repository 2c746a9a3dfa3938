"""Training the local reader: the packaged GGUF's weights in torch, LoRA on its projections, the training loop on
the CPU, and the GGUF adapter file llama.cpp applies at run time.

torch and gguf are needed only here (`pip install -e ".[train]"`), and only once a training runs: the finetune
teleprompter (programs/compile/finetune.py, which train_reader.py and optimize.py --optimizer finetune run) imports
the modules that use them when it trains. The settings (lora_config.py, training_plan.py) import neither, so
FinetuneSettings and the commands' flags (programs/cli/training_flags.py) read their defaults without them.
"""
