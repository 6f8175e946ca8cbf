"""The driver: runs the pipeline over the discovered files, cut by job.

* `settings`: what a run is asked to do (`Settings`);
* `run`: the run (`analyze`): the plan, cache hits, the jobs, the merge and
  the policy of one finding per defect;
* `dependencies`: the plan (every file read once; the packages a package
  imports, the dependencies outside the run), and facts made from files
  where a dependency's own are unknown;
* `package`: one package: prefilter, parse, the rules, findings, and the
  facts it exports (the driver moves facts as opaque data; it imports no
  analysis);
* `keys`: a package's own digest, its cache key (own inputs and its
  imports' summaries) and the cache's salt;
* `schedule`: packages in dependency order, each looked up once its
  imports are done, and the jobs of the misses;
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
