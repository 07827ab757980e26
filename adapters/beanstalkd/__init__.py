"""The `beanstalkd` adapter (:mod:`.adapter`) and its server launcher (:mod:`.server`)."""

from .adapter import BeanstalkdAdapter

__all__ = ["BeanstalkdAdapter"]
