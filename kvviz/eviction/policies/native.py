"""The kernels as native code, called without setting up numba's compiler (for the command line).

A process that calls a numba kernel, even one numba has cached on disk, first sets up numba's CPU
target: about half a CPU second on this machine (its typing and lowering registries, and
scipy.linalg imported to look for BLAS), which was most of a short ``hitcurve`` run
(docs/eviction.md, Speed). The compiled kernels do not need any of it: they are machine code that
calls a few C helpers of numba's runtime (allocation, the GIL, raising). So an ``entry`` — a
kernel that Python calls — also gets a C entry point, a numba ``cfunc`` over plain pointers and
lengths. ``build`` compiles every entry once and keeps the object code in a folder beside numba's
cache, named after the kernels' sources, the Python, numba and llvmlite versions and the host CPU;
``link`` makes a process link those objects with llvmlite's MCJIT (numba's own dependency) and
resolve the helpers from numba's C runtime modules, as numba does when it loads its cache; within
``native_calls`` the entries are called through ctypes, which releases the GIL as ``nogil``
kernels do.

It is the same compiled code called another way, so the results are the numba kernels' own
(tests/eviction/test_native.py compares them). Arguments of other types than an entry's (an int32 id
array, say) go to numba's dispatcher, which compiles for them as before. Only the command line
uses it: the app's server sets up numba once and keeps its dispatchers.
"""

from __future__ import annotations

import ctypes
import hashlib
import importlib.machinery
import importlib.util
import json
import sys
import tempfile
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from importlib.metadata import version
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np

from kvviz.eviction.policies._jit import CACHE_DIR, Jitted, kernel, numba_module

DTYPES = {"i8": np.int64, "b1": np.bool_}
MANIFEST = "entries.json"


@dataclass
class Entry:
    """A kernel Python calls, with the C types of its arguments and result.

    ``args`` and ``result`` are ``"i8"`` (int64) or ``"b1"`` (bool), with ``"[:]"`` for a 1-D
    array. An array result is as long as the first argument, which is an array.
    """

    kernel: Jitted
    args: tuple[str, ...]
    result: str

    @property
    def name(self) -> str:
        return f"{self.kernel.__module__}.{self.kernel.__name__}"

    def __call__(self, *args: Any) -> Any:
        native = _NATIVE.functions.get(self.name) if _NATIVE.enabled else None
        if native is None or not _exact_types(self.args, args):
            return self.kernel(*args)
        return _call(native, self, args)


_ENTRIES: dict[str, Entry] = {}


def entry(*args: str, result: str):
    """Decorator: a compiled kernel (``_jit.kernel``) that also has a C entry point."""
    def wrap(func):
        made = Entry(kernel(func), tuple(args), result)
        _ENTRIES[made.name] = made
        return made
    return wrap


def _is_array(kind: str) -> bool:
    return kind.endswith("[:]")


def _exact_types(kinds: tuple[str, ...], values: tuple[Any, ...]) -> bool:
    """Whether ``values`` are what the entry's C signature takes, without a conversion."""
    for kind, value in zip(kinds, values, strict=True):
        if _is_array(kind):
            if not (isinstance(value, np.ndarray) and value.ndim == 1 and value.dtype == DTYPES[kind[:-3]]
                    and value.flags.c_contiguous):
                return False
        elif not isinstance(value, (int, np.integer)) or isinstance(value, bool):
            return False
    return True


def _call(native: ctypes._CFuncPtr, spec: Entry, values: tuple[Any, ...]) -> Any:
    c_args: list[Any] = []
    for kind, value in zip(spec.args, values):
        if _is_array(kind):
            c_args += [value.ctypes.data, len(value)]
        else:
            c_args.append(int(value))
    if not _is_array(spec.result):
        return native(*c_args)
    out = np.empty(len(values[0]), DTYPES[spec.result[:-3]])
    if native(*c_args, out.ctypes.data, len(out)) != 0:
        raise RuntimeError(f"{spec.name} returned an array of another length than its first argument")
    return out


# -- building the objects (numba) ------------------------------------------------------------------

def _c_source(spec: Entry) -> str:
    """A cfunc's Python source: arrays arrive as (pointer, length) and are viewed with ``carray``."""
    params, call = [], []
    for i, kind in enumerate(spec.args):
        if _is_array(kind):
            params += [f"p{i}", f"n{i}"]
            call.append(f"carray(p{i}, n{i})")
        else:
            params.append(f"a{i}")
            call.append(f"a{i}")
    if not _is_array(spec.result):
        return f"def c_entry({', '.join(params)}):\n    return kernel({', '.join(call)})\n"
    return (f"def c_entry({', '.join(params)}, out, size):\n    result = kernel({', '.join(call)})\n"
            f"    if len(result) != size:\n        return 1\n"
            f"    carray(out, size)[:] = result\n    return 0\n")


def _c_signature(spec: Entry):
    types = numba_module().types
    scalar = {"i8": types.int64, "b1": types.boolean}
    params = []
    for kind in spec.args:
        params += [types.CPointer(scalar[kind[:-3]]), types.int64] if _is_array(kind) else [scalar[kind]]
    if _is_array(spec.result):
        return types.int64(*params, types.CPointer(scalar[spec.result[:-3]]), types.int64)
    return scalar[spec.result](*params)


def _compile(spec: Entry) -> tuple[str, bytes]:
    """The entry's C symbol and the object code holding it (with everything it calls inlined)."""
    numba = numba_module()
    namespace = {"carray": numba.carray, "kernel": spec.kernel}
    exec(_c_source(spec), namespace)  # noqa: S102 -- our own generated source, not user input
    compiled = numba.cfunc(_c_signature(spec), nogil=True)(namespace["c_entry"])
    return compiled.native_name, compiled._library._get_compiled_object()


def build(folder: Path) -> None:
    """Compile every registered entry and write the objects to ``folder``, atomically: two
    processes building at once both finish and one folder (either) stays."""
    folder.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=".native-", dir=folder.parent))
    manifest = {}
    for name, spec in sorted(_ENTRIES.items()):
        symbol, code = _compile(spec)
        (staging / f"{name}.o").write_bytes(code)
        manifest[name] = {"symbol": symbol, "sha256": hashlib.sha256(code).hexdigest()}
    (staging / MANIFEST).write_text(json.dumps(manifest, indent=1))
    try:
        staging.rename(folder)
    except OSError:                      # another process got there first: keep its folder
        for path in staging.iterdir():
            path.unlink()
        staging.rmdir()


def folder_for() -> Path:
    """Where the objects for the current kernels, numba, llvmlite and CPU live."""
    import llvmlite
    import llvmlite.binding as ll

    # CACHE_DIR is already named after this package's sources; the entries' own modules may lie outside it.
    sources = sorted({sys.modules[spec.kernel.__module__].__file__ for spec in _ENTRIES.values()})
    digest = hashlib.sha1()
    for path in sources:
        digest.update(Path(path).read_bytes())
    digest.update(" ".join([sys.version, version("numba"), llvmlite.__version__, ll.get_host_cpu_name(),
                            ll.get_host_cpu_features().flatten(), *sorted(_ENTRIES)]).encode())
    return CACHE_DIR / f"native-{digest.hexdigest()[:16]}"


# -- loading them (llvmlite only) ------------------------------------------------------------------

class _Native:
    """The process's linked entries (``functions``: entry name -> ctypes function)."""

    def __init__(self) -> None:
        self.enabled = False
        self.tried = False                 # link() ran, whether or not it linked anything
        self.functions: dict[str, ctypes._CFuncPtr] = {}
        self.engines: list[Any] = []       # kept alive: they own the code's memory
        self.lock = threading.Lock()


_NATIVE = _Native()


def _runtime_module(name: str) -> ModuleType:
    """One of numba's C extension modules, loaded from its file without importing numba (0.15–0.2 s),
    and registered under its own name, so that numba, if imported later, shares it."""
    if name in sys.modules:
        return sys.modules[name]
    folder = Path(importlib.util.find_spec("numba").origin).parent.joinpath(*name.split(".")[1:-1])
    path = next(p for p in folder.glob(name.rsplit(".", 1)[1] + ".*") if p.suffix in (".so", ".pyd"))
    loader = importlib.machinery.ExtensionFileLoader(name, str(path))
    module = importlib.util.module_from_spec(importlib.util.spec_from_file_location(name, path, loader=loader))
    loader.exec_module(module)
    sys.modules[name] = module
    return module


def _add_runtime_symbols() -> None:
    """Point the objects' undefined symbols at numba's C runtime, under the names numba gives them,
    with the allocator numba's runtime uses (``numba.core.runtime.nrt`` sets it when imported)."""
    import llvmlite.binding as ll

    helperlib = _runtime_module("numba._helperlib")
    nrt = _runtime_module("numba.core.runtime._nrt_python")
    nrt.memsys_use_cpython_allocator()
    for prefix, helpers in (("numba_", helperlib.c_helpers), ("NRT_", nrt.c_helpers)):
        for name, address in helpers.items():
            ll.add_symbol(name if name.startswith("_") else prefix + name, address)


def _ctypes_of(spec: Entry) -> ctypes._CFuncPtr:
    c = {"i8": ctypes.c_int64, "b1": ctypes.c_bool}
    params = []
    for kind in spec.args:
        params += [ctypes.c_void_p, ctypes.c_int64] if _is_array(kind) else [c[kind]]
    if _is_array(spec.result):
        return ctypes.CFUNCTYPE(ctypes.c_int64, *params, ctypes.c_void_p, ctypes.c_int64)
    return ctypes.CFUNCTYPE(c[spec.result], *params)


def _verified_objects(folder: Path) -> dict[str, tuple[str, bytes]]:
    """Each entry's symbol and object code, all checked against the manifest's hashes first: linking
    a damaged object file crashes the process (LLVM does not check), so any doubt means none."""
    manifest = json.loads((folder / MANIFEST).read_text())
    objects = {}
    for name in _ENTRIES:
        code = (folder / f"{name}.o").read_bytes()
        if hashlib.sha256(code).hexdigest() != manifest[name]["sha256"]:
            raise ValueError(f"{name}.o does not match its hash")
        objects[name] = (manifest[name]["symbol"], code)
    return objects


def _link(objects: dict[str, tuple[str, bytes]]) -> dict[str, ctypes._CFuncPtr]:
    import llvmlite.binding as ll

    ll.initialize_native_target()
    ll.initialize_native_asmprinter()
    _add_runtime_symbols()
    machine = ll.Target.from_default_triple().create_target_machine(codemodel="jitdefault")
    functions = {}
    for name, (symbol, code) in objects.items():
        engine = ll.create_mcjit_compiler(ll.parse_assembly(""), machine)
        engine.add_object_file(ll.ObjectFileRef.from_data(code))
        engine.finalize_object()
        _NATIVE.engines.append(engine)
        address = engine.get_function_address(symbol)
        if not address:
            raise ValueError(f"{name}.o has no {symbol}")
        functions[name] = _ctypes_of(_ENTRIES[name])(address)
    return functions


def link() -> None:
    """Link this machine's objects for the current kernels, building them first if there are none.
    If that fails (an unwritable cache folder, a damaged object), entries stay with numba's
    dispatchers, which are slower to start but give the same results."""
    with _NATIVE.lock:
        if _NATIVE.tried:
            return
        _NATIVE.tried = True
        try:
            folder = folder_for()
            if not (folder / MANIFEST).exists():
                build(folder)
            _NATIVE.functions = _link(_verified_objects(folder))
        except (OSError, ValueError, KeyError, RuntimeError):
            _NATIVE.functions = {}


@contextmanager
def native_calls() -> Iterator[None]:
    """Within this block, entries are called natively (after ``link``); numba's dispatchers after it."""
    link()
    _NATIVE.enabled = True
    try:
        yield
    finally:
        _NATIVE.enabled = False
