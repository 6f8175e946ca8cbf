"""The driver: runs the pipeline over the discovered files, cut by job.

* `settings`: what a run is asked to do (`Settings`);
* `run`: the run (`analyze`): dependencies, cache hits, the jobs, the merge
  and the policy of one finding per defect;
* `package`: one package: read, prefilter, parse, the rules, findings, and
  the facts it exports (the driver moves facts as opaque data; it imports
  no analysis);
* `dependencies`: the packages of the module a package imports, and their
  facts made from their files;
* `keys`: cache keys and the cache's salt;
* `schedule`: jobs in dependency order, and the facts they lend importers;
* `pool` and `worker`: the worker processes, each with the state its
  initialiser made, and one process's jobs.

Work is split per directory (a package is the unit that facts such as
"never returns" are computed over) and spread over worker processes.
"""

from cudalint.driver.package import dump_cfgs
from cudalint.driver.pool import default_jobs
from cudalint.driver.run import analyze, one_per_defect
from cudalint.driver.settings import Settings

__all__ = ["Settings", "analyze", "default_jobs", "dump_cfgs", "one_per_defect"]
