"""Failures the knowledge base files under this family's categories (see
rules/_known_failure.py): named at the user's line with what the known error means."""

from __future__ import annotations

from hangdoctor.rules._known_failure import KnownErrorFailure
from hangdoctor.taxonomy import Category


class KnownVersionFailure(KnownErrorFailure):
    """the job failed of a known error of incompatible versions

    Fires when: the job failed and its exception is a known version incompatibility (a GPU
    architecture the build has no kernels for, a driver older than the runtime, a library API that
    changed): names it at your line, with what it means and the fix

    Why: Builds, drivers and libraries move independently; when they disagree the error names a
    symptom (a missing kernel image, an attribute that no longer exists) whose cause is the pair of
    versions.
    """

    id = "HD596"
    category = Category.ENV_VERSION_INCOMPATIBLE


class KnownLibraryFailure(KnownErrorFailure):
    """the job failed of a known error of missing or mismatched libraries

    Fires when: the job failed and its exception is a known library error (a module that is not
    installed, an undefined symbol, a GLIBC or shared library that is not found): names it at your
    line, with what it means and the fix

    Why: An extension built against one library loads in an environment that has another; the
    loader's message names the symbol or the file, and the fix is in the environment, not the code.
    """

    id = "HD597"
    category = Category.ENV_LIBRARY_MISMATCH
