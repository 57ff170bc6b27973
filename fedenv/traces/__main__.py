"""Trace tooling.

    python -m fedenv.traces devices --sources DIR     # derive traces/devices.csv (DIR: traces/README.md)
    python -m fedenv.traces generate                                  # rebuild traces/default.json
    python -m fedenv.traces generate --held-out-from default --seed 1 --out traces/held-out-devices.json
    python -m fedenv.traces generate --extend-from default --clients 800 --seed 2 --out traces/default-800.json
    python -m fedenv.traces import --fedscale CAPACITY [--behave BEHAVE] --out my_trace.json
    python -m fedenv.traces import --csv devices.csv --out my_trace.json
    python -m fedenv.traces inspect [TRACE]
    python -m fedenv.traces plot [TRACE] --out trace.png
"""

from __future__ import annotations

import argparse
import json
import sys

from fedenv.fileio import atomic_write_json, atomic_write_text
from fedenv.registry import MODELS
from fedenv.traces import (
    DEFAULT_TRACE,
    HELD_OUT_DEVICES_TRACE,
    MORE_CLIENTS_TRACE,
    SHIPPED_TRACES_DIR,
    load_trace,
    resolve_trace_path,
)
from fedenv.traces.generate import (
    derive_device_table,
    dumps_trace,
    extend_trace,
    generate_trace,
    held_out_devices,
    read_device_table,
    write_device_table,
)
from fedenv.traces.importers import import_csv, import_fedscale
from fedenv.traces.report import plot_trace, summary_text


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m fedenv.traces", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    devices = sub.add_parser("devices", help="derive the device table from FLASH's measurement files")
    devices.add_argument("--sources", required=True, help="folder holding flash/*.json")
    devices.add_argument("--out", default=str(SHIPPED_TRACES_DIR / "devices.csv"))
    generate = sub.add_parser("generate", help="generate a trace file from the device table")
    generate.add_argument("--devices", default=str(SHIPPED_TRACES_DIR / "devices.csv"))
    generate.add_argument("--out", help="trace file to write (default: traces/default.json, or "
                                        "traces/held-out-devices.json with --held-out-from, or "
                                        "traces/default-800.json with --extend-from)")
    generate.add_argument("--clients", type=int, default=100)
    generate.add_argument("--rounds", type=int, help="length of each per-round series (default: 100; with "
                                                     "--extend-from, TRACE's)")
    generate.add_argument("--seed", type=int, default=0)
    origin = generate.add_mutually_exclusive_group()
    origin.add_argument("--held-out-from", metavar="TRACE",
                        help="draw only devices that no client of TRACE (a shipped trace name or a file) has: "
                             "held-out device types")
    origin.add_argument("--extend-from", metavar="TRACE",
                        help="keep the clients of TRACE (a shipped trace name or a file) and draw more up to "
                             "--clients from the same devices, with TRACE's rounds: a larger pool")
    importer = sub.add_parser("import", help="convert a FedScale or CSV trace to our format")
    source = importer.add_mutually_exclusive_group(required=True)
    source.add_argument("--fedscale", metavar="CAPACITY", help="FedScale client_device_capacity pickle")
    source.add_argument("--csv", metavar="FILE", help="CSV: client, device, ms_per_sample, upload_kbps, download_kbps")
    importer.add_argument("--behave", metavar="BEHAVE", help="FedScale client_behave_trace pickle (availability)")
    importer.add_argument("--reference-model", default="mlp", choices=MODELS.names(),
                          help="the model the per-sample times were measured with (default: %(default)s)")
    importer.add_argument("--out", required=True)
    for name, text in (("inspect", "per-device and per-client summary table"), ("plot", "PNG of the distributions")):
        command = sub.add_parser(name, help=text)
        command.add_argument("trace", nargs="?", default=DEFAULT_TRACE,
                             help="shipped trace name or file (default: %(default)s)")
        if name == "plot":
            command.add_argument("--out", default="trace.png")
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        if args.command == "devices":
            rows = derive_device_table(args.sources)
            write_device_table(rows, args.out)
            print(f"wrote {len(rows)} devices to {args.out}")
        elif args.command == "generate":
            if args.extend_from and args.rounds is not None:
                parser.error(f"--rounds {args.rounds} with --extend-from: the rounds are {args.extend_from}'s")
            if args.extend_from and args.out is None and not (
                    args.clients == 800  # what traces/default-800.json holds
                    and resolve_trace_path(args.extend_from) == resolve_trace_path(DEFAULT_TRACE)):
                parser.error(f"--extend-from {args.extend_from} --clients {args.clients} needs --out: the default, "
                             f"traces/{MORE_CLIENTS_TRACE}.json, is the default trace extended to 800 clients")
            devices, name = read_device_table(args.devices), DEFAULT_TRACE
            if args.held_out_from:
                devices, name = held_out_devices(devices, load_trace(args.held_out_from)), HELD_OUT_DEVICES_TRACE
            if args.extend_from:
                base = json.loads(resolve_trace_path(args.extend_from).read_text())
                document, name = extend_trace(base, devices, args.clients, args.seed), MORE_CLIENTS_TRACE
                document["generator"]["command"] += f" --extend-from {args.extend_from} --clients {args.clients}"
                document["generator"]["extends"] = args.extend_from
            else:
                document = generate_trace(devices, args.clients, 100 if args.rounds is None else args.rounds, args.seed)
            out = args.out or str(SHIPPED_TRACES_DIR / f"{name}.json")
            if args.held_out_from:
                document["generator"]["command"] += f" --held-out-from {args.held_out_from}"
                document["generator"]["held_out_from"] = args.held_out_from
            atomic_write_text(out, dumps_trace(document))
            print(f"wrote {len(document['clients'])} clients x {document['generator']['num_rounds']} rounds to {out}")
        elif args.command == "import":
            if args.behave and not args.fedscale:
                parser.error("--behave goes with --fedscale")
            document = (import_fedscale(args.fedscale, args.behave, args.reference_model) if args.fedscale
                        else import_csv(args.csv, args.reference_model))
            atomic_write_json(args.out, document)
            print(f"wrote {len(document['clients'])} clients to {args.out}")
        elif args.command == "inspect":
            print(summary_text(load_trace(args.trace)))
        else:
            plot_trace(load_trace(args.trace), args.out)
            print(f"wrote {args.out}")
    except (ValueError, FileNotFoundError) as error:
        parser.exit(2, f"error: {error}\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
