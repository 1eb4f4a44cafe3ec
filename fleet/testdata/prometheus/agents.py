# Two agents' /metrics as the contract (issue 27, agent helper) serves them.
import sys
def c(ns,pod,ctr,ok,on,node,cg,limit,req,burst,adv,advb,cur,advp,krr,krrp,vpa,vpap,win):
    L='namespace="%s",pod="%s",container="%s"'%(ns,pod,ctr)
    out=['throttlelab_container_info{%s,owner_kind="%s",owner_name="%s",cgroup="%s",node="%s"} 1'%(L,ok,on,cg,node)]
    if limit is not None:
        out.append('throttlelab_container_cpu_limit_cores{%s} %g'%(L,limit))
        out.append('throttlelab_container_cpu_burst_cores{%s} %g'%(L,burst))
    if req is not None: out.append('throttlelab_container_cpu_request_cores{%s} %g'%(L,req))
    out.append('throttlelab_demand_window_seconds{%s} %g'%(L,win))
    if adv is not None:
        out.append('throttlelab_advised_cpu_limit_cores{%s,target="throttled=0.01"} %g'%(L,adv))
        if advb is not None: out.append('throttlelab_advised_cpu_burst_cores{%s,target="throttled=0.01"} %g'%(L,advb))
        for at,p in (("current",cur),("advised",advp),("krr",krrp),("vpa",vpap)):
            if p is None: continue
            out.append('throttlelab_predicted_throttled_ratio{%s,at="%s"} %g'%(L,at,p[0]))
            out.append('throttlelab_predicted_delay_p99_seconds{%s,at="%s"} %g'%(L,at,p[1]))
        if krr: out.append('throttlelab_krr_cpu_cores{%s} %g'%(L,krr))
        if vpa: out.append('throttlelab_vpa_cpu_target_cores{%s} %g'%(L,vpa))
    return out
a=[]; b=[]
cg="/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod%s.slice/cri-containerd-%s.scope"
a+=c("shop","checkout-7d9f8c6b5d-abcde","app","ReplicaSet","checkout-7d9f8c6b5d","node-a",cg%("1a","01"),0.5,0.25,0,0.8,0.6,(0.182,0.0412),(0.008,0.0031),0.31,(0.41,0.095),0.36,(0.33,0.081),86400)
a+=c("shop","checkout-7d9f8c6b5d-abcde","envoy","ReplicaSet","checkout-7d9f8c6b5d","node-a",cg%("1a","02"),0.2,0.1,0,0.1,None,(0.0,0.0),(0.004,0.0009),0.05,(0.02,0.004),0.06,(0.012,0.003),86400)
b+=c("shop","checkout-7d9f8c6b5d-fghij","app","ReplicaSet","checkout-7d9f8c6b5d","node-b",cg%("2b","03"),0.5,0.25,0,0.9,0.65,(0.233,0.0519),(0.009,0.0034),0.33,(0.47,0.102),0.38,(0.39,0.09),86400)
b+=c("shop","checkout-7d9f8c6b5d-fghij","envoy","ReplicaSet","checkout-7d9f8c6b5d","node-b",cg%("2b","04"),0.2,0.1,0,0.1,None,(0.0,0.0),(0.004,0.0008),0.05,(0.021,0.004),0.06,(0.011,0.003),86400)
b+=c("shop","checkout-7d9f8c6b5d-klmno","app","ReplicaSet","checkout-7d9f8c6b5d","node-b",cg%("3c","05"),0.5,0.25,0,0.7,0.55,(0.121,0.0301),(0.009,0.0029),0.29,(0.36,0.088),0.34,(0.29,0.071),86400)
b+=c("shop","checkout-7d9f8c6b5d-klmno","envoy","ReplicaSet","checkout-7d9f8c6b5d","node-b",cg%("3c","06"),0.2,0.1,0,0.1,None,(0.0,0.0),(0.003,0.0008),0.05,(0.019,0.004),0.06,(0.010,0.003),86400)
g="/kubepods.slice/kubepods-pod%s.slice/cri-containerd-%s.scope"
a+=c("shop","db-0","postgres","StatefulSet","db","node-a",g%("4d","07"),2,2,0,1.5,None,(0.0,0.0),(0.009,0.0042),1.1,(0.08,0.021),1.2,(0.05,0.017),86400)
b+=c("shop","db-1","postgres","StatefulSet","db","node-b",g%("5e","08"),2,2,0,1.4,None,(0.0,0.0),(0.008,0.0040),1.0,(0.09,0.023),1.1,(0.06,0.018),86400)
be="/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod%s.slice/cri-containerd-%s.scope"
a+=c("monitoring","node-exporter-x7k2p","node-exporter","DaemonSet","node-exporter","node-a",cg%("6f","09"),None,0.1,0,0.15,None,None,(0.007,0.0012),0.04,(0.3,0.02),0.05,(0.2,0.015),86400)
b+=c("batch","report-29410560-q8z4m","worker","Job","report-29410560","node-b",cg%("7a","10"),1,0.5,0,1.2,1.0,(0.064,0.0381),(0.009,0.0102),0.62,(0.52,0.31),0.71,(0.43,0.24),3600)
a+=c("default","debug","shell","","","node-a",cg%("8b","11"),0.1,0.1,0,None,None,None,None,None,None,None,None,0)
open("a.prom","w").write("\n".join(a)+"\n")
open("b.prom","w").write("\n".join(b)+"\n")
