-- slurmctld's job_submit script for rgpu (docs/slurm.md): a job that asks
-- for rgpu devices with --rgpu=N (rgpu_spank.so passes the option as
-- SPANK_RGPU in the job's spank environment) gets N x tasks of the `rgpu`
-- license, whose count `rgpu pool slurm-licenses` keeps equal to the pool's
-- devices. So such jobs wait in Slurm's queue until the pool has room, and a
-- job asking more than the pool has is refused at submission by slurmctld.
-- Install it as job_submit.lua beside slurm.conf with JobSubmitPlugins=lua
-- (or merge this function into a site's own script).

local NO_VAL = 4294967294
local LICENSE = "rgpu"

-- The --rgpu value from the job's spank environment, or nil.
local function rgpu_option(job_desc)
   local env = job_desc.spank_job_env
   if env == nil then return nil end
   for _, entry in pairs(env) do
      local value = string.match(entry, "^SPANK_RGPU=(.*)$") or string.match(entry, "^RGPU=(.*)$")
      if value ~= nil then return value end
   end
   return nil
end

-- The job's license list without any `rgpu` item, and the items kept.
local function other_licenses(licenses)
   local kept = {}
   if licenses ~= nil then
      for item in string.gmatch(licenses, "[^,]+") do
         local name = string.match(item, "^([^:@]+)")
         if name ~= LICENSE then table.insert(kept, item) end
      end
   end
   return kept
end

function slurm_job_submit(job_desc, part_list, submit_uid)
   local option = rgpu_option(job_desc)
   if option == nil then return slurm.SUCCESS end
   local devices = tonumber(string.match(option, "^(%d+)"))
   if devices == nil or devices < 1 then
      slurm.log_user("--rgpu=%s: the device count comes first (--rgpu=N[,mem=SIZE][,share=F][,kind=K])", option)
      return slurm.ERROR
   end
   local tasks = job_desc.num_tasks
   if tasks == nil or tasks == NO_VAL or tasks < 1 then tasks = 1 end
   local licenses = other_licenses(job_desc.licenses)
   table.insert(licenses, LICENSE .. ":" .. tostring(devices * tasks))
   job_desc.licenses = table.concat(licenses, ",")
   slurm.log_debug("rgpu: job of uid %d asks %d device(s) per task for %d task(s): licenses %s",
                   submit_uid, devices, tasks, job_desc.licenses)
   return slurm.SUCCESS
end

function slurm_job_modify(job_desc, job_rec, part_list, modify_uid)
   return slurm.SUCCESS
end

return slurm.SUCCESS
