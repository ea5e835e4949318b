"""``minigraph rpc-server`` and the ``--rpc-*`` options of run, profile and diagnose: the shell
around remote/ and report/fleet.py."""
from __future__ import annotations

import argparse
import os
import sys

from ..errors import InputError, MinigraphError
from ..fileio import write_outputs
from ..measure.interrupt import interrupt_exit_code, terminate_as_interrupt
from ..remote.client import FleetRequest, check_devices, run_fleet
from ..remote.server import start_server
from ..remote.spec import spec_for, upload_plan
from ..remote.tracker import parse_address
from ..report.fleet import render
from ..values.inputs import input_paths, parse_input_args
from .args import model_files, shapes
from .paths import check_outputs, report_file, said_where
from .terminal import emit


def add_rpc_arguments(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("remote devices (TVM RPC tracker)")
    g.add_argument("--rpc-tracker", metavar="HOST:PORT",
                   help="run on devices behind this TVM RPC tracker instead of here")
    g.add_argument("--rpc-key", metavar="KEY",
                   help="the device key the servers registered under (rpc-server --key)")
    g.add_argument("--rpc-devices", default="1", metavar="N|all",
                   help="how many distinct devices, in parallel (default 1), or 'all' "
                        "registered under the key")
    g.add_argument("--rpc-wait", type=float, default=60.0, metavar="SECONDS",
                   help="how long to wait for a free device (default 60)")
    g.add_argument("--rpc-timeout", type=float, default=3600.0, metavar="SECONDS",
                   help="the device kills a job that runs longer (default 3600)")


def wants_remote(args: argparse.Namespace) -> bool:
    return bool(getattr(args, "rpc_tracker", None) or getattr(args, "rpc_key", None))


def _request(args: argparse.Namespace):
    if not (args.rpc_tracker and args.rpc_key):
        raise InputError("--rpc-tracker and --rpc-key go together")
    if not args.rpc_wait > 0:
        raise InputError(f"--rpc-wait must be > 0 seconds, got {args.rpc_wait}")
    local_only = [f"--{d.replace('_', '-')}" for d in ("csv", "trace", "raw", "out")
                  if getattr(args, d, None)]
    if local_only:
        raise InputError(f"{local_only[0]} is not available with --rpc-tracker: save the "
                         "devices' results with --json and render them with `minigraph show`")
    return FleetRequest(parse_address(args.rpc_tracker), args.rpc_key,
                        check_devices(args.rpc_devices), args.rpc_wait)


def _progress(quiet: bool):
    def report(d) -> None:
        if not quiet:
            state = f"done in {d.elapsed_s:.1f} s" if d.ok else f"error: {d.error}"
            emit(f"device #{d.index} {d.name()}: {state}", file=sys.stderr, flush=True)
    return report


def run_remote(args: argparse.Namespace, kind: str, **job: object) -> int:
    """Runs the job on the devices, writes --json (the fleet), prints the fleet report.
    Exit 0 when at least one device produced a result; the errors of the others are shown."""
    req = _request(args)
    check_outputs(args)
    files = model_files(args)
    items = getattr(args, "input", [])
    if items:  # bad .npy files fail here, before anything is uploaded
        parse_input_args(items)
    inputs = input_paths(items)
    plan = upload_plan(files, inputs, with_vm=bool(job.get("protocols")))
    spec = spec_for(kind, plan, inputs, force=args.force, timeout_s=args.rpc_timeout,
                    fill=getattr(args, "fill", None), shapes=shapes(args), **job)
    fleet = run_fleet(req, spec, plan, files.describe(), _progress(getattr(args, "quiet", False)))
    errors = said_where(write_outputs(
        [(getattr(args, "json_out", None), fleet.to_json)], partial=fleet.partial,
        overwrite=getattr(args, "overwrite_partial", False)), "fleet result")
    emit(render(fleet), file=report_file(args))
    if errors:
        raise errors[0]
    if not fleet.succeeded():
        if fleet.partial:
            raise KeyboardInterrupt
        raise MinigraphError(f"no device produced a result ({fleet.devices[0].error})")
    return interrupt_exit_code() if fleet.partial else 0


def profile_settings(args: argparse.Namespace, settings) -> dict:
    """The job fields of a remote profile (threads left to the device unless given)."""
    return {"settings": settings.to_dict(),
            "threads": {"threads": args.threads, "affinity": args.affinity, "cpus": args.cpus,
                        "pin_main": args.pin_main}}


def diagnose_settings(args: argparse.Namespace, s) -> dict:
    """The job fields of a remote diagnosis: ``s``, the DiagnoseSettings the options make (the
    same as a local diagnosis), validated before anything is uploaded; threads stay the
    device's unless given."""
    return {"settings": {**s.to_dict(), "threads": args.threads},
            "protocols": not args.no_protocols}


def add_server_arguments(s: argparse.ArgumentParser) -> None:
    s.add_argument("--tracker", required=True, metavar="HOST:PORT",
                   help="the TVM RPC tracker to register with")
    s.add_argument("--key", required=True, help="device key to register under, e.g. rk3588")
    s.add_argument("--host", default="127.0.0.1",
                   help="address to listen on (default 127.0.0.1: this machine only). TVM's "
                        "RPC has no authentication: whoever reaches this port can run code "
                        "here; bind only to a network you trust")
    s.add_argument("--port", type=int, default=9090, help="first port to try (default 9090)")
    s.add_argument("--port-end", type=int, default=None,
                   help="try ports up to this one, exclusive (default PORT+100)")


def cmd_rpc_server(args: argparse.Namespace) -> int:
    tracker = parse_address(args.tracker, "--tracker")
    if not args.key or ":" in args.key:
        raise InputError(f"--key must be a non-empty name without ':', got '{args.key}'")
    end = args.port_end if args.port_end is not None else args.port + 100
    server = start_server(tracker, args.key, args.host, args.port, end)
    emit(f"minigraph rpc-server: key '{args.key}', listening on {args.host}:{server.port}, "
          f"registering with tracker {args.tracker} (pid {os.getpid()}); Ctrl-C to stop",
          flush=True)
    try:
        with terminate_as_interrupt():
            server.wait()
    except KeyboardInterrupt:
        emit("minigraph rpc-server: stopped", flush=True)
        return 0
    finally:
        server.stop()
    emit("error: the RPC server process ended on its own", file=sys.stderr)
    return 1
