# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""No-change runs: site.yml's fast path, the digest of a run's inputs and whether every node is as its
last converge left it (``stamp``), and the digests, unmet pins and missing packages that let a role skip
work (``digests``).
"""
