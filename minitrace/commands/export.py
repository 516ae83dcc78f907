"""``minitrace export FILE --format otf2|ti|csv|perfetto -o OUT``: the older spelling of
``minitrace convert FILE --to otf2|ti|csv|perfetto -o OUT``, which it says."""
from __future__ import annotations

from ..converters import EXPORTS
from . import COMMANDS
from .convert import add_export_options, export, replaced_by


def register(sub) -> None:
    """Add the ``export`` subcommand (listed in minitrace.commands.COMMANDS)."""
    p = sub.add_parser("export", help=COMMANDS["export"],
                       description="Export a trace: the same as 'minitrace convert FILE --to "
                                   "FORMAT -o OUT' (see its --help for the formats).")
    p.add_argument("file", help="minitrace HDF5 file")
    p.add_argument("--format", required=True, choices=EXPORTS)
    p.add_argument("-o", "--output", required=True, metavar="OUT",
                   help="output (ti per-rank: the list file; its rank files go to OUT_files/)")
    add_export_options(p)
    p.set_defaults(func=run)


def run(args) -> int:
    """``minitrace convert FILE --to FORMAT``."""
    status = export(args.file, args.output, args.format, args.layout, args.lossy)
    replaced_by("export", "convert --to")
    return status
