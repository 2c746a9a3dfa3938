"""Language models: one `dspy.LM` for the program, hosted through LiteLLM or in-process with llama.cpp."""
