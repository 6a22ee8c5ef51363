"""The parameters of VTA's default design as its ``vta_config.json`` writes them (vta-facts
1.1), for tests that write such files with a ``TARGET`` of their choice."""

from __future__ import annotations

__all__ = ["VTA_DEFAULT_LOGS"]

VTA_DEFAULT_LOGS = {
    "LOG_INP_WIDTH": 3,
    "LOG_WGT_WIDTH": 3,
    "LOG_ACC_WIDTH": 5,
    "LOG_BATCH": 0,
    "LOG_BLOCK": 4,
    "LOG_UOP_BUFF_SIZE": 15,
    "LOG_INP_BUFF_SIZE": 15,
    "LOG_WGT_BUFF_SIZE": 18,
    "LOG_ACC_BUFF_SIZE": 17,
}
