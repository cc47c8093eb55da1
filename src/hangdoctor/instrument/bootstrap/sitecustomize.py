"""hangdoctor's bootstrap, loaded by every Python process of a job run under `hangdoctor run`.

It runs in the job's interpreter (any Python >= 3.8, any venv, hangdoctor not importable), so
it is stdlib only. It must cost nothing in processes that never use torch: it only puts a small
finder on sys.meta_path that waits for `import torch` to complete, and arms the probe
(`_hangdoctor_probe`) then; it then waits for `torch._dynamo` (torch.compile), which the probe
must hide from. `jax`, `tensorflow` and `keras` (and optax, Orbax's and Flax's checkpointing)
arm it the same way, each with its own hooks. Being first on PYTHONPATH, it hides any other `sitecustomize`, so it
loads the one that would otherwise have run (a venv's, the distribution's) and hands it its name.
"""

import os
import sys

# Annotations are strings and these imports are for the type checker only: importing `typing`
# or `importlib.abc` would cost every process of the job.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Sequence
    from importlib.abc import Loader
    from importlib.machinery import ModuleSpec, PathFinder
    from types import ModuleType

    _LoaderBase = Loader
else:
    _LoaderBase = object

# Beside this file, first on sys.path: the names this side of the boundary shares with
# hangdoctor's.
import _hangdoctor_protocol  # type: ignore[import-not-found]  # noqa: E402

_STATUS_DIR_ENV = _hangdoctor_protocol.STATUS_DIR_ENV
_PROBE = _hangdoctor_protocol.PROBE_MODULE
_HERE = os.path.dirname(os.path.abspath(__file__))


def _probe() -> "ModuleType":
    """The probe, loaded from next to this file (sys.path may have changed since)."""
    probe: ModuleType = _hangdoctor_protocol.load_module(
        _PROBE, os.path.join(_HERE, _PROBE + ".py")
    )
    return probe


def _arm() -> None:
    """Arm the probe: torch is imported."""
    try:  # noqa: SIM105 -- importing contextlib would cost every process
        _probe().arm()
    except Exception:
        pass  # never break the job for the sake of watching it


def _dynamo_loaded() -> None:
    try:  # noqa: SIM105
        _probe().dynamo_loaded()
    except Exception:
        pass


def _process_ends() -> None:
    """multiprocessing is imported: note the processes the job ends (torch or not)."""
    try:  # noqa: SIM105
        _probe().watch_process_ends()
    except Exception:
        pass


def _asyncio_loaded() -> None:
    """asyncio is imported: note work scheduled on a loop from another thread (torch or not)."""
    try:  # noqa: SIM105
        _probe().watch_offloop_calls()
    except Exception:
        pass


def _framework_loaded(name: str) -> "Callable[[], None]":
    """What to call when framework `name` (jax, tensorflow, keras, ...) is imported."""

    def loaded() -> None:
        try:  # noqa: SIM105
            _probe().framework_loaded(name)
        except Exception:
            pass

    return loaded


# Frameworks other than torch whose import arms the probe and hooks their steps.
_FRAMEWORKS = ("jax", "optax", "orbax.checkpoint", "flax.training.checkpoints", "tensorflow",
               "keras", "tf_keras")
# Modules whose import completing the probe must hear of, and what to call then.
_WATCHED = {
    "torch": _arm,
    "torch._dynamo": _dynamo_loaded,
    "multiprocessing.process": _process_ends,
    "asyncio.base_events": _asyncio_loaded,
}
_WATCHED.update((name, _framework_loaded(name)) for name in _FRAMEWORKS)


class _ArmingLoader(_LoaderBase):
    """Wraps torch's own loader: runs it unchanged, then arms the probe.

    The module sees its real loader in `__loader__` and `__spec__.loader` from the start, so
    torch's code cannot tell the difference.
    """

    def __init__(self, loader: "Loader", finder: "_TorchImportWatcher") -> None:
        self._loader = loader
        self._finder = finder

    def __getattr__(self, name: str) -> object:
        if name.startswith("__") or name in ("_loader", "_finder"):
            raise AttributeError(name)  # no recursion while half-built (copy, pickle)
        return getattr(self._loader, name)

    def create_module(self, spec: "ModuleSpec") -> "ModuleType | None":
        create = getattr(self._loader, "create_module", None)
        return create(spec) if create is not None else None

    def exec_module(self, module: "ModuleType") -> None:
        try:
            module.__loader__ = self._loader
            if module.__spec__ is not None:
                module.__spec__.loader = self._loader
        except Exception:
            pass
        self._loader.exec_module(module)
        try:  # noqa: SIM105 -- importing contextlib would cost every process
            self._finder.loaded(module.__name__)
        except Exception:
            pass


class _TorchImportWatcher:
    """A sys.meta_path finder that only ever answers for the watched modules (`torch`, then
    `torch._dynamo`): with the spec the other finders would have returned, its loader wrapped so
    that we know when the module is fully imported."""

    def __init__(self) -> None:
        self._busy = False

    def find_spec(
        self,
        fullname: str,
        path: "Sequence[str] | None" = None,
        target: "ModuleType | None" = None,
    ) -> "ModuleSpec | None":
        if fullname not in _WATCHED or self._busy:
            return None
        self._busy = True
        try:
            spec = self._spec_from_the_others(fullname, path, target)
        except Exception:
            return None  # the import machinery asks the others again and fails as it would have
        finally:
            self._busy = False
        if spec is None or spec.loader is None or not hasattr(spec.loader, "exec_module"):
            return None
        spec.loader = _ArmingLoader(spec.loader, self)
        return spec

    def _spec_from_the_others(
        self, fullname: str, path: "Sequence[str] | None", target: "ModuleType | None"
    ) -> "ModuleSpec | None":
        for finder in list(sys.meta_path):
            if finder is self:
                continue
            if getattr(finder, "find_spec", None) is None:
                return None  # a legacy finder: leave the whole import to the machinery
            spec = finder.find_spec(fullname, path, target)
            if spec is not None:
                return spec
        return None

    def loaded(self, name: str) -> None:
        if all(watched in sys.modules for watched in _WATCHED) and self in sys.meta_path:
            sys.meta_path.remove(self)
        _WATCHED[name]()


def _install() -> None:
    """Arm now if torch is already there (a .pth file imported it), else wait for it."""
    if not os.environ.get(_STATUS_DIR_ENV):
        return
    try:
        if "torch" in sys.modules:
            _arm()  # which also handles a torch._dynamo already imported
        if "multiprocessing.process" in sys.modules:
            _process_ends()
        if "asyncio.base_events" in sys.modules:
            _asyncio_loaded()
        for name in _FRAMEWORKS:
            if name in sys.modules:
                _WATCHED[name]()
        if not all(watched in sys.modules for watched in _WATCHED):
            sys.meta_path.insert(0, _TorchImportWatcher())
    except Exception:
        pass


def _import_system() -> "tuple[type[PathFinder], Callable[[ModuleSpec], ModuleType]]":
    """importlib's PathFinder and module_from_spec, from the frozen modules every interpreter has
    already loaded: importing importlib.util would cost each process a few milliseconds."""
    frozen = sys.modules.get("_frozen_importlib")
    frozen_external = sys.modules.get("_frozen_importlib_external")
    if frozen is not None and frozen_external is not None:
        return frozen_external.PathFinder, frozen.module_from_spec
    import importlib._bootstrap as bootstrap
    import importlib._bootstrap_external as external

    return external.PathFinder, bootstrap.module_from_spec


def _chain_load() -> None:
    """Run the `sitecustomize` that we hide, as `sitecustomize`, so it behaves as without us.

    Its own errors propagate: `site` reports them exactly as it would have without us.
    """
    try:
        path_finder, module_from_spec = _import_system()
        path = [entry for entry in sys.path if os.path.abspath(entry) != _HERE]
        spec = path_finder.find_spec("sitecustomize", path)
        if spec is None or spec.loader is None:
            return
        module = module_from_spec(spec)
    except Exception:
        return
    sys.modules["sitecustomize"] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        sys.modules.pop("sitecustomize", None)  # as a failed import leaves it
        raise


_install()
if __name__ == "sitecustomize":  # not when `hangdoctor.watch()` loads this file by its path
    _chain_load()
