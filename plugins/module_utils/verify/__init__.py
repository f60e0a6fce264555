# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""verify.yml: which links to measure in which rounds (``plan``), link tests with perftest or iperf3
(``link_test``, ``bandwidth``, and their parsers ``perftest``, ``iperf3``), reading the nodes' results
(``parse``), thresholds and verdicts (``thresholds``), the path NCCL took (``nccl_path``, with the rails of a
multi-NIC fabric in ``nccl_rails``), and the report (``report``).
"""
