# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The local virtual cluster (systemd-nspawn nodes in network namespaces): its plan of names,
addresses and MACs (``plan``), the host-side plumbing (``host``, ``fabric``, ``rootfs``, ``teardown``),
parsers of what the host reports (``parse``), and its fast path (``stamp``). Used by the lab role only.
"""
