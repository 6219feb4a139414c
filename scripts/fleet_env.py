"""The fleet that scripts/fleet-lib.sh started, read from the environment it exports: the signing key and salt
(hex), nginx's and the origin's URLs, and each node's port and pid. Shared by the fleet test's load and poison
phases and the fleet benchmark."""
import os


def fleet_env():
    """(key bytes, salt bytes, fleet URL, origin URL, node ports, node pids)."""
    env = os.environ
    return (bytes.fromhex(env["HALCYON_KEY"]), bytes.fromhex(env["HALCYON_SALT"]),
            f"http://127.0.0.1:{env['FLEET_PORT']}", f"http://127.0.0.1:{env['ORIGIN_PORT']}",
            [int(p) for p in env["NODE_PORTS"].split(",")], [int(p) for p in env["NODE_PIDS"].split(",")])
