"""Typed loader options and the one function that builds any variant of any case.

Every case lists its variants in a registry, ``name -> Variant(description, build,
options, graph_only)``. ``build_loader`` builds one: it parses the variant's own
options into its ``VariantOptions`` class (an unknown option is one clear error),
refuses tf.data service for a pipeline that runs Python, calls the builder, records
the epoch's exact example count on the loader (``kit.epochs.epoch_of``) and, with
``service=``, runs it through tf.data service with that count.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, fields
from typing import Any, Callable, ClassVar, Mapping

from kit import epochs
from kit.distribute.service import SERVICE_TIMEOUT_S, through_service
from kit.util import check_int


@dataclass(frozen=True)
class LoaderOptions:
    """What every variant of every case takes; validates itself.

    Attributes:
        batch_size: examples per batch (the last batch of an epoch may be smaller).
        shuffle: reshuffle every epoch.
        seed: makes the shuffles reproducible.
        workdir: where derived stores are built (``kit.store.default_workdir()`` if None).
        progress: show progress bars while converting (a string sets the description).
    """

    batch_size: int
    shuffle: bool = True
    seed: int = 0
    workdir: str | os.PathLike | None = None
    progress: bool | str = True

    def __post_init__(self):
        check_int("batch_size", self.batch_size)
        if not isinstance(self.shuffle, bool):
            raise ValueError(f"shuffle must be True or False, got {self.shuffle!r}")


@dataclass(frozen=True)
class VariantOptions:
    """Base of one variant's own options: a frozen dataclass that validates itself.

    ``POSITIVE`` names the fields that must be positive integers (None allowed where
    the default is None); ``FLAGS`` those that must be True, False or None.
    """

    POSITIVE: ClassVar[tuple[str, ...]] = ()
    FLAGS: ClassVar[tuple[str, ...]] = ()

    def __post_init__(self):
        for name in self.POSITIVE:
            value = getattr(self, name)
            if value is not None:
                check_int(name, value)
        for name in self.FLAGS:
            value = getattr(self, name)
            if not (value is None or isinstance(value, bool)):
                raise ValueError(f"{name} must be True, False or None, got {value!r}")

    @classmethod
    def parse(cls, variant: str, options: Mapping[str, Any]) -> "VariantOptions":
        """``cls(**options)``, with one clear error for the options ``variant`` does not take."""
        unknown = sorted(set(options) - {f.name for f in fields(cls)})
        if unknown:
            raise ValueError(f"variant {variant!r} takes no option(s) {', '.join(unknown)}")
        return cls(**options)


@dataclass(frozen=True)
class NoOptions(VariantOptions):
    """A variant that takes no options of its own."""


@dataclass(frozen=True)
class Variant:
    """One loader variant of a case.

    Attributes:
        description: one line: what it is.
        build: ``build(index, options, variant_options)`` -> a loader.
        options: its ``VariantOptions`` class.
        graph_only: True when its pipeline is pure TensorFlow graph (tf.data service
            can run it); or ``(option, value)``: only with that option set so.
    """

    description: str
    build: Callable
    options: type[VariantOptions] = NoOptions
    graph_only: bool | tuple[str, Any] = False

    def runs_on_service(self, variant_options: VariantOptions) -> bool:
        if isinstance(self.graph_only, tuple):
            key, value = self.graph_only
            return getattr(variant_options, key) == value
        return bool(self.graph_only)


def graph_only(registry: Mapping[str, Variant]) -> tuple[str, ...]:
    """The variants of ``registry`` that tf.data service can always run."""
    return tuple(name for name, v in registry.items() if v.graph_only is True)


def _service_choices(registry: Mapping[str, Variant]) -> str:
    names = list(graph_only(registry))
    names += [f"{name} with {v.graph_only[0]}={v.graph_only[1]!r}" for name, v in registry.items()
              if isinstance(v.graph_only, tuple)]
    return ", ".join(names)


def check_variant(registry: Mapping[str, Variant], name: str, service: str | None = None,
                  service_timeout_s: float | None = None, **variant_options) -> tuple[Variant, VariantOptions]:
    """Variant ``name`` of ``registry`` and its options, checked before anything is built.

    Raises:
        ValueError: an unknown variant or option, a bad option value, or (with ``service``, the
            ``grpc://HOST:PORT`` of a tf.data service dispatcher) a variant the service cannot run.
    """
    if name not in registry:
        raise ValueError(f"unknown variant {name!r}; choose one of {', '.join(registry)}")
    variant = registry[name]
    vopts = variant.options.parse(name, variant_options)
    if service is None and service_timeout_s is not None:
        raise ValueError("service_timeout_s= is for a loader read through tf.data service (service=)")
    if service is not None and not variant.runs_on_service(vopts):
        raise ValueError(
            f"variant {name!r} runs Python code in its pipeline, which tf.data service workers "
            f"cannot run; use one of {_service_choices(registry)} with service="
        )
    return variant, vopts


def serve(loader, name: str, examples: int, batch_size: int, service: str | None = None,
          service_timeout_s: float | None = None):
    """A built loader as the case hands it out: its ``kit.epochs.Epoch`` recorded (``examples`` per
    epoch) and, with ``service``, read through tf.data service, the epoch checked against
    ``examples`` on this side (``service_timeout_s``: the longest wait for one batch, default
    ``kit.distribute.SERVICE_TIMEOUT_S``)."""
    if epochs.epoch_of(loader) is None:
        epochs.record(loader, examples, batch_size)
    if service is not None:
        timeout_s = SERVICE_TIMEOUT_S if service_timeout_s is None else service_timeout_s
        loader = through_service(loader, service, examples=examples, timeout_s=timeout_s)
        epochs.not_resumable(loader, f"variant {name!r} is read through tf.data service, whose workers hold "
                                     f"the epoch's position; build it without service= to resume mid-epoch")
    return loader


def build_loader(registry: Mapping[str, Variant], name: str, index, options: LoaderOptions,
                 service: str | None = None, service_timeout_s: float | None = None, **variant_options):
    """``check_variant``, the variant built over ``index`` with ``options``, then ``serve``: a case's
    ``make_loader`` in one call (the two cases call the three steps themselves, so that a loader's
    options go straight down from the case to its builder)."""
    variant, vopts = check_variant(registry, name, service, service_timeout_s, **variant_options)
    return serve(variant.build(index, options, vopts), name, len(index), options.batch_size, service,
                 service_timeout_s)
