"""Run-scoped trusted services (see core/service.py for the contract, host.py for serving)."""

from rebench.services.host import SERVICES_MOUNT, ServiceHost

__all__ = ["SERVICES_MOUNT", "ServiceHost"]
