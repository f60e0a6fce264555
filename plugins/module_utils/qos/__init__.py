# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Lossless RoCE QoS end to end: the fabric's one set of numbers and their check (``roce``); a Cisco IOS-XE /
NX-OS switch's QoS as pure Python (``switch_inputs`` its inputs, ``switch_lines`` the intended lines and their
comparison with running, ``switch_models`` what Cisco's YANG models say, ``switch_payload`` the XML sent,
``switch_readback`` running parsed back); the NETCONF change that applies it safely (``netconf`` the steps,
``netconf_session`` the session and its reads, ``netconf_change`` one run's locks, commit and cancel,
``netconf_errors`` what a failure says); a host NIC's DCB settings (``dcb``), verify.yml's QoS verdict
(``verify``), and the switch_qos role's validate phase (``phase``).
"""
