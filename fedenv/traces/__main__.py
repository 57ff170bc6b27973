"""Command line for traces: ``python -m fedenv.traces {devices,generate} ...``."""

from __future__ import annotations

import argparse

from fedenv.fileio import atomic_write_text
from fedenv.traces import SHIPPED_TRACES_DIR, load_trace
from fedenv.traces.generate import derive_device_table, dumps_trace, generate_trace, read_device_table, write_device_table


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m fedenv.traces", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    devices = sub.add_parser("devices", help="derive the device table from FLASH's measurement files")
    devices.add_argument("--sources", required=True, help="folder holding flash/*.json")
    devices.add_argument("--out", default=str(SHIPPED_TRACES_DIR / "devices.csv"))
    generate = sub.add_parser("generate", help="generate a trace file from the device table")
    generate.add_argument("--devices", default=str(SHIPPED_TRACES_DIR / "devices.csv"))
    generate.add_argument("--out", default=str(SHIPPED_TRACES_DIR / "default.json"))
    generate.add_argument("--clients", type=int, default=100)
    generate.add_argument("--rounds", type=int, default=100, help="length of each bandwidth series")
    generate.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    if args.command == "devices":
        rows = derive_device_table(args.sources)
        write_device_table(rows, args.out)
        print(f"wrote {len(rows)} devices to {args.out}")
    else:
        document = generate_trace(read_device_table(args.devices), args.clients, args.rounds, args.seed)
        atomic_write_text(args.out, dumps_trace(document))
        trace = load_trace(args.out)
        print(f"wrote {len(trace.clients)} clients x {args.rounds} rounds to {args.out}")


if __name__ == "__main__":
    main()
