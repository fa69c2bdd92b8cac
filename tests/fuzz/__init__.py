"""Mutation fuzzing of the public entry points (issue 11: hostile input).

``nox -s fuzz -- --examples N [--seed S] [--target NAME] [--json PATH]`` runs it;
:mod:`.mutate` builds inputs, :mod:`.targets` feeds them, :mod:`.properties` says what
must hold, :mod:`.runner` loops, deduplicates and writes reproducers.
"""
