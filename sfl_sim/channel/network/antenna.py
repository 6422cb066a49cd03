"""The sector antenna of a three-sector site: the element pattern of TR 38.901 Table 7.3-1.

3GPP TR 38.901 Table 7.3-1 ("Radiation power pattern of a single antenna element") gives, in the
element's local coordinates (zenith angle ``theta``, azimuth ``phi`` from the boresight, degrees):

* vertical cut:   ``A_V(theta) = -min(12 ((theta - 90) / theta_3dB)^2, SLA_V)``,
  ``theta_3dB = 65 deg``, ``SLA_V = 30 dB``;
* horizontal cut: ``A_H(phi) = -min(12 (phi / phi_3dB)^2, A_max)``, ``phi_3dB = 65 deg``,
  ``A_max = 30 dB``;
* 3-D pattern:    ``A(theta, phi) = -min(-(A_V + A_H), A_max)``;
* maximum directional gain of an element ``G_E,max = 8 dBi``.

The values as read from two implementations that cite the table: ns-3's ``ThreeGppAntennaModel``
(``src/antenna/model/three-gpp-antenna-model.cc``: beamwidths 65 deg, ``m_aMax`` 30, ``m_slaV`` 30,
``m_geMax`` 8.0, and the three formulas above) and Sionna's ``tr38901_pattern``
(``sionna/rt/antenna.py``: ``theta_3db = phi_3db = 65 deg``, ``a_max = sla_v = 30``,
``g_e_max = 8``).  A site's sector antenna is one such element (our reading: no array gain, no
beam; the gain is the element's ``G_E,max + A``), its boresight horizontal (no mechanical or
electrical tilt: our choice), the same pattern for receiving (the uplink) as for transmitting.
"""
from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["THETA_3DB_DEG", "PHI_3DB_DEG", "SLA_V_DB", "A_MAX_DB", "G_E_MAX_DBI", "element_gain_dbi"]

#: Vertical 3 dB beamwidth, deg (TR 38.901 Table 7.3-1).
THETA_3DB_DEG = 65.0
#: Horizontal 3 dB beamwidth, deg (TR 38.901 Table 7.3-1).
PHI_3DB_DEG = 65.0
#: Side-lobe level limit of the vertical cut, dB (TR 38.901 Table 7.3-1).
SLA_V_DB = 30.0
#: Front-back ratio: the most attenuation, dB (TR 38.901 Table 7.3-1).
A_MAX_DB = 30.0
#: Maximum directional gain of an antenna element, dBi (TR 38.901 Table 7.3-1).
G_E_MAX_DBI = 8.0


def element_gain_dbi(azimuth_offset_deg: Any, zenith_deg: Any = 90.0) -> np.ndarray:
    """The element's gain towards each direction, dBi: ``G_E,max + A(theta, phi)``.

    Parameters
    ----------
    azimuth_offset_deg : array_like
        Azimuth from the boresight, deg (any value: wrapped into (-180, 180]).
    zenith_deg : array_like, optional
        Zenith angle, deg (90: the horizon; a client below the antenna is above 90).  Broadcast
        against ``azimuth_offset_deg``.
    """
    phi = 180.0 - (180.0 - np.asarray(azimuth_offset_deg, dtype=float)) % 360.0
    theta = np.asarray(zenith_deg, dtype=float)
    a_v = -np.minimum(12.0 * ((theta - 90.0) / THETA_3DB_DEG) ** 2, SLA_V_DB)
    a_h = -np.minimum(12.0 * (phi / PHI_3DB_DEG) ** 2, A_MAX_DB)
    return G_E_MAX_DBI - np.minimum(-(a_v + a_h), A_MAX_DB)
