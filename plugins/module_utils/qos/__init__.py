# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Lossless RoCE QoS end to end: the fabric's one set of numbers and their check (``roce``), the
Cisco IOS-XE / NX-OS payloads and read-back (``switch``), the NETCONF session that changes a switch safely
(``netconf``), a host NIC's DCB settings (``dcb``), verify.yml's QoS verdict (``verify``), and the
switch_qos role's validate phase (``phase``).
"""
