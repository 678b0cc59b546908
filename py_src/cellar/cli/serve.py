"""`cellar serve SITE_DIR`: serve a built site on a local port."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from cellar.site.server import make_server


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("serve", help="serve a built site locally")
    parser.add_argument("site", type=Path, metavar="SITE_DIR")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=port, default=8000, help="0 picks a free one (default 8000)")
    parser.add_argument("--verbose", action="store_true", help="log every request")
    parser.set_defaults(func=run)


def port(text: str) -> int:
    """A TCP port number from the command line (argparse's type)."""
    try:
        number = int(text)
    except ValueError:
        number = -1
    if not 0 <= number <= 65535:
        raise argparse.ArgumentTypeError(f"a port number from 0 to 65535, not {text!r}")
    return number


def run(args: argparse.Namespace) -> int:
    if not (args.site / "index.html").is_file():
        print(
            f"cellar serve: {args.site}: no index.html; build the site first (python3 build.py site)", file=sys.stderr
        )
        return 1
    try:
        server = make_server(args.site, args.host, args.port, args.verbose)
    except OSError as error:
        print(
            f"cellar serve: cannot listen on {args.host}:{args.port}: {error.strerror}; choose another with --port",
            file=sys.stderr,
        )
        return 1
    print(f"Serving {args.site} at http://{args.host}:{server.server_port}/  (Ctrl+C stops)", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
    return 0
