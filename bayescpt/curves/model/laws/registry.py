"""The law registry: every loss-curve law registers its class and declares its options as data.

A law is a subclass of :class:`~bayescpt.curves.model.laws.base.Law` decorated with
:func:`register_law`; its ``options`` tuple of :class:`LawOption` says which keyword arguments
its constructor takes, their defaults, help text and command-line flag. From that the command line
builds its ``--law`` choices and flags, and :func:`resolve_law_options` validates options given for
a law and fills the ones the law chooses from the data (:meth:`Law.resolve_options`).

Laws are listed in registration order; where several laws are named together (a shared option's
owners, the command line's option groups) the most recently registered comes first.
"""

from __future__ import annotations

from dataclasses import dataclass

#: name -> law class, in registration order
LAWS: dict = {}


@dataclass(frozen=True)
class LawOption:
    """One option of a law: a keyword argument of its constructor.

    ``default`` is the law's value when the option is not given (None: chosen from the data by
    :meth:`Law.resolve_options`). ``flag`` is the command-line flag (default ``--name`` with
    dashes; a bool option gets ``--flag/--no-flag``), ``group`` the title of its command-line
    option group; ``cli`` False keeps the option to the library.
    """

    name: str
    default: object = None
    help: str = ""
    type: type = bool
    flag: str = ""
    group: str = ""
    cli: bool = True

    @property
    def cli_flag(self) -> str:
        return self.flag or "--" + self.name.replace("_", "-")


def register_law(cls):
    """Class decorator: add ``cls`` (a Law with a unique ``name``) to :data:`LAWS`."""
    if not cls.name:
        raise ValueError(f"{cls.__name__}: a registered law needs a name")
    if cls.name in LAWS and LAWS[cls.name] is not cls:
        raise ValueError(
            f"a law named {cls.name!r} is already registered ({LAWS[cls.name].__name__})"
        )
    LAWS[cls.name] = cls
    return cls


def unregister_law(name: str) -> None:
    """Remove a law from :data:`LAWS` (for tests and interactive work)."""
    LAWS.pop(name, None)


def law_names() -> list[str]:
    """Names of the registered laws, in registration order."""
    return list(LAWS)


def law_class(name: str):
    """The class of the law called ``name`` (see :func:`law_names`)."""
    if name not in LAWS:
        raise ValueError(f"unknown law {name!r}; expected one of {sorted(LAWS)}")
    return LAWS[name]


def get_law(name: str, **options):
    """The law called ``name`` (see :func:`law_names`) with its options."""
    return law_class(name)(**options)


def cli_options() -> list[LawOption]:
    """Every command-line option of every law, once per flag (the newest law's declaration)."""
    seen = {}
    for cls in reversed(LAWS.values()):
        for opt in cls.options:
            if opt.cli and opt.cli_flag not in seen:
                seen[opt.cli_flag] = opt
    return list(seen.values())


def option_groups() -> list[tuple[str, list[LawOption]]]:
    """The command-line options grouped by their ``group`` title, in :func:`cli_options` order."""
    groups: dict[str, list[LawOption]] = {}
    for opt in cli_options():
        groups.setdefault(opt.group, []).append(opt)
    return list(groups.items())


def owners(option_name: str) -> list[str]:
    """The laws that take option ``option_name``, most recently registered first."""
    return [n for n, cls in reversed(LAWS.items()) if option_name in {o.name for o in cls.options}]


def resolve_law_options(law_name: str, df, given: dict) -> dict:
    """The options to fit ``law_name`` with: ``given`` validated, the rest from the law and data.

    ``given`` maps option names to values; None means not given. An option of another law is an
    error naming its flag and the laws that take it. What is returned is what the fit records
    (:meth:`Law.resolve_options`: by default only the options that differ from their defaults).
    """
    if law_name not in LAWS:
        raise ValueError(f"unknown law {law_name!r}; expected one of {sorted(LAWS)}")
    cls = LAWS[law_name]
    given = {k: v for k, v in given.items() if v is not None}
    mine = {o.name for o in cls.options}
    foreign = [k for k in given if k not in mine]
    if foreign:
        laws = owners(foreign[0])
        same = [k for k in foreign if owners(k) == laws]
        flags = ", ".join(_flag(k) for k in same)
        if not laws:
            raise ValueError(f"{flags}: not an option of any law")
        if len(laws) > 1:
            what = f"an option of the {' and '.join(laws)} laws"
        else:
            what = f"options of the {laws[0]} law"
        raise ValueError(f"{flags}: {what}, not of --law {law_name}")
    return cls.resolve_options(df, given)


def _flag(name: str) -> str:
    for opt in cli_options():
        if opt.name == name:
            return opt.cli_flag
    return "--" + name.replace("_", "-")
