# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The local virtual cluster (systemd-nspawn nodes in network namespaces): its plan of names,
addresses and MACs (``plan``), the host-side plumbing (``host``, ``fabric``, ``rootfs``, ``teardown``),
parsers of what the host reports (``parse``), its fast path (``stamp``), and the lab role's check of its
settings and host (``phase``). Used by the lab role only.
"""
