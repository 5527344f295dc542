"""Mint a CA and the certificates a secured fencer needs, as PEM files: `python examples/tls/mint.py DIR`.

DIR/ca.pem                                the CA (give it to every side: --tls-ca)
DIR/controller.pem, controller.key        the controller's listener (for 127.0.0.1 and localhost),
                                          also presented by its control channel to brokers
DIR/broker.pem, broker.key                the brokers' (fleet's) client and listener certificate
DIR/admin.pem, admin.key                  an operator's client certificate

Each subject's CN is its name, so with `--ssl-principal-mapping-rules 'RULE:^CN=([^,]+),.*$/$1/,DEFAULT'`
the principals are User:controller, User:broker and User:admin. trustme (a test dependency) makes
throwaway certificates: for production, your own CA and `openssl req`/`openssl x509` do the same.
"""

from __future__ import annotations

import sys
from pathlib import Path

import trustme


def mint(directory: Path) -> None:
    directory.mkdir(parents=True, exist_ok=True)
    ca = trustme.CA()
    ca.cert_pem.write_to_path(str(directory / "ca.pem"))
    for name in ("controller", "broker", "admin"):
        leaf = ca.issue_cert("127.0.0.1", "localhost", common_name=name)
        leaf.private_key_pem.write_to_path(str(directory / f"{name}.key"))
        leaf.cert_chain_pems[0].write_to_path(str(directory / f"{name}.pem"))
        print(f"{directory / name}.pem and .key: CN={name}")
    print(f"{directory / 'ca.pem'}: the CA")


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: python examples/tls/mint.py DIR")
    mint(Path(sys.argv[1]))
