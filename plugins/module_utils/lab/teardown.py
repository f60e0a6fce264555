# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Teardown of a lab instance, or of the nodes it no longer has, found by prefix (also after a crash)."""

from __future__ import annotations

import contextlib
import os

from ansible_collections.rdmaops.cluster.plugins.module_utils.lab.host import Host
from ansible_collections.rdmaops.cluster.plugins.module_utils.lab.plan import netns_name, node_of_host_link


def teardown(host: Host, keep: list[str] | None, infra_units: tuple[str, ...], timeout: float) -> list[str]:
    """Remove the whole instance (keep is None) or only the nodes not in keep; returns removed node names."""
    lab = host.lab
    own_ns = host.own_netns()
    if keep is None:
        host.stop(None, own_ns, timeout)
        host.unmount_all(host.instance_dir)
        for ns in own_ns:
            host.delete_netns(ns)
        for name in host.own_host_links():
            host.delete_link(name)
        host.remove_cgroups()
        host.remove_tree(host.instance_dir)
        host.remove_tree(host.instance_run_dir)
        # Shared parents go with the last instance (rmdir fails while another instance has entries).
        if not host.check_mode:
            for parent in [os.path.dirname(d) for d in host.cgroup_dirs()] + [host.run_dir]:
                with contextlib.suppress(OSError):
                    os.rmdir(parent)
        return sorted(ns[len(lab) + 1 :] for ns in own_ns)
    nodes = {ns[len(lab) + 1 :] for ns in own_ns}
    for top in host.cgroup_dirs():
        if os.path.isdir(top):
            nodes |= {d for d in os.listdir(top) if os.path.isdir(os.path.join(top, d))}
    nodes |= host.nodes_on_disk()
    gone = sorted(n for n in nodes if n not in keep and n not in infra_units)
    host_links = host.links()
    for node in gone:
        ns = netns_name(lab, node)
        host.stop(node, [ns] if ns in own_ns else [], timeout)
        host.unmount_all(os.path.join(host.instance_dir, node))
        if ns in own_ns:
            host.delete_netns(ns)
        for name, link in host_links.items():
            if name.startswith(lab + "-") and node_of_host_link(lab, link) == node and name in host.links():
                host.delete_link(name)
        host.remove_cgroups(node)
        host.remove_tree(os.path.join(host.instance_dir, node))
        for suffix in (".pid", ".log"):
            path = os.path.join(host.instance_run_dir, node + suffix)
            if os.path.exists(path):
                host.change(f"remove {path}")
                if not host.check_mode:
                    os.unlink(path)
    return gone
